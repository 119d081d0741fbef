package dictsim

import (
	"crypto/tls"
	"crypto/x509"
	"errors"
)

// Credentials are what a simulator served as the DICT is (over mutual
// TLS, its answers signed) is made of: its TLS server certificate, the
// CAs of the participants' client certificates, the DICT's signing
// certificate and key, and the participants.
type Credentials struct {
	// Server is the TLS server certificate and its key.
	Server tls.Certificate
	// ClientCAs are the CAs of the participants' TLS client certificates:
	// a connection without a client certificate they issued is refused
	// in the handshake.
	ClientCAs *x509.CertPool
	// Signer signs every answer.
	Signer Signer
	// Participants are the participants that may call (ParticipantOf).
	Participants []Participant
}

// ParticipantOf is the participant ispb whose TLS client certificate,
// cert, signs its requests too (as the tests' and make run's participants
// do).
func ParticipantOf(ispb string, cert *x509.Certificate) Participant {
	return Participant{ISPB: ispb, TLSCertificates: []*x509.Certificate{cert}, SigningCertificates: []*x509.Certificate{cert}}
}

// NewServed is a new simulator of opts, signing with c.Signer and knowing
// c.Participants besides opts', and the TLS configuration its API
// (Simulator.Handler) is served with: c.Server's certificate, a client
// certificate of c.ClientCAs required (the participant is known by it).
// It is the one constructor of a served simulator: the tests'
// (NewTestServer) and the binary's (cmd/dictsim).
func NewServed(opts Options, c Credentials) (*Simulator, *tls.Config, error) {
	if c.ClientCAs == nil || len(c.Server.Certificate) == 0 {
		return nil, nil, errors.New("dict simulator: serving over mutual TLS takes a server certificate and the clients' CAs")
	}
	opts.Signer = c.Signer
	opts.Participants = append(append([]Participant(nil), opts.Participants...), c.Participants...)
	sim, err := New(opts)
	if err != nil {
		return nil, nil, err
	}
	return sim, &tls.Config{
		Certificates: []tls.Certificate{c.Server},
		ClientAuth:   tls.RequireAndVerifyClientCert,
		ClientCAs:    c.ClientCAs,
		MinVersion:   tls.VersionTLS12,
	}, nil
}
