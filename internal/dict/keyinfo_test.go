package dict_test

import (
	"context"
	"crypto"
	"crypto/x509"
	"encoding/pem"
	"errors"
	"os"
	"strings"
	"testing"

	"github.com/beevik/etree"
	dsig "github.com/russellhaering/goxmldsig"

	"github.com/pixbank/pix/internal/dict"
	"github.com/pixbank/pix/internal/tooling/dictsim"
)

// pemBlock reads the one PEM block of file.
func pemBlock(t *testing.T, file string) []byte {
	t.Helper()
	b, err := os.ReadFile(file)
	if err != nil {
		t.Fatal(err)
	}
	p, _ := pem.Decode(b)
	if p == nil {
		t.Fatalf("%s: no PEM block", file)
	}
	return p.Bytes
}

// signedAs is body signed enveloped (as the DICT signs) by the key of
// keyFile, KeyInfo carrying the certificates of certFiles in that order
// (none: no KeyInfo at all).
func signedAs(t *testing.T, body *etree.Element, keyFile string, certFiles ...string) []byte {
	t.Helper()
	key, err := x509.ParsePKCS8PrivateKey(pemBlock(t, keyFile))
	if err != nil {
		t.Fatal(err)
	}
	certs := make([][]byte, 0, len(certFiles))
	for _, f := range certFiles {
		certs = append(certs, pemBlock(t, f))
	}
	sc, err := dsig.NewSigningContext(key.(crypto.Signer), certs)
	if err != nil {
		t.Fatal(err)
	}
	sc.Canonicalizer = dsig.MakeC14N10ExclusiveCanonicalizerWithPrefixList("")
	root := body.Copy()
	sig, err := sc.ConstructSignature(root, true)
	if err != nil {
		t.Fatal(err)
	}
	if len(certFiles) == 0 {
		// KeyInfo is outside SignedInfo: taken out, the signature stands.
		sig.RemoveChild(sig.SelectElement("KeyInfo"))
	}
	root.InsertChildAt(0, sig)
	doc := etree.NewDocument()
	doc.WriteSettings.CanonicalText = true
	doc.CreateProcInst("xml", `version="1.0" encoding="UTF-8"`)
	doc.SetRoot(root)
	out, err := doc.WriteToBytes()
	if err != nil {
		t.Fatal(err)
	}
	return out
}

// TestAnAnswerIsVerifiedOnlyAgainstTheConfiguredDICTCertificate pins what
// the client trusts of an answer's signature: the DICT's certificates as
// configured (Config.DICTCertFile), compared whole, and nothing the answer
// carries. A certificate in its KeyInfo is never a key to verify with: one
// that is not a configured certificate is refused (ErrUnverifiedAnswer,
// "signature invalid"), even when the signature is by its own key and it
// is issued by the same CA as the DICT's (another participant's, the
// bank's own), or when the signature is the DICT's own; and the DICT's
// certificate named in KeyInfo does not make a signature by another key
// verify. Only the DICT's key is accepted, with its certificate in KeyInfo
// or without KeyInfo (the one configured certificate then). Found right:
// goxmldsig (validate.go, verifyCertificate) takes the KeyInfo certificate
// only to find it among the configured ones; this test keeps it so.
func TestAnAnswerIsVerifiedOnlyAgainstTheConfiguredDICTCertificate(t *testing.T) {
	ts := newDICT(t, dictsim.Options{})
	c := newClient(t, ts.Config)
	ctx := context.Background()
	rep := openReport(t, ts, c, dict.ReportOpen)
	dictCert := ts.Config.DICTCertFile
	dictKey := strings.TrimSuffix(dictCert, ".crt") + ".key"
	bankCert, bankKey := ts.Config.CertFile, ts.Config.KeyFile
	for _, tc := range []struct {
		name     string
		key      string
		certs    []string
		accepted bool
	}{
		{name: "the DICT's key, its certificate in KeyInfo", key: dictKey, certs: []string{dictCert}, accepted: true},
		{name: "the DICT's key, no KeyInfo", key: dictKey, accepted: true},
		{name: "a participant's key and certificate, of the DICT's CA", key: bankKey, certs: []string{bankCert}},
		{name: "a stranger's key and certificate", key: ts.ForeignKeyFile, certs: []string{ts.ForeignCertFile}},
		{name: "a stranger's key, the DICT's certificate in KeyInfo", key: ts.ForeignKeyFile, certs: []string{dictCert}},
		{name: "a participant's key, the DICT's certificate in KeyInfo", key: bankKey, certs: []string{dictCert}},
		{name: "a stranger's certificate first, the DICT's after it", key: ts.ForeignKeyFile, certs: []string{ts.ForeignCertFile, dictCert}},
		{name: "the DICT's key, a participant's certificate in KeyInfo", key: dictKey, certs: []string{bankCert}},
		{name: "the DICT's key, a participant's certificate first", key: dictKey, certs: []string{bankCert, dictCert}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			hook(ts, func(x *dictsim.Exchange, model func() dictsim.Answer) dictsim.Answer {
				a := model()
				if x.Op == "getInfractionReport" {
					a.Raw = signedAs(t, a.Body, tc.key, tc.certs...)
				}
				return a
			})
			defer hook(ts, nil)
			got, err := c.GetInfractionReport(ctx, rep.ID)
			if tc.accepted {
				if err != nil || got.ID != rep.ID {
					t.Fatalf("signed by the DICT: %+v, %v", got, err)
				}
				return
			}
			var se *dict.SignatureError
			if !errors.Is(err, dict.ErrUnverifiedAnswer) || !errors.As(err, &se) || se.Reason != "signature invalid" || dict.Classify(err) != dict.Unverified {
				t.Fatalf("accepted or refused otherwise: %+v, %v (class %s)", got, err, dict.Classify(err))
			}
			if got != (dict.InfractionReport{}) {
				t.Errorf("a report was returned: %+v", got)
			}
		})
	}
}
