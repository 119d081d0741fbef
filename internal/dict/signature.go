package dict

import (
	"crypto"
	"crypto/x509"
	"encoding/xml"
	"errors"
	"fmt"

	"github.com/beevik/etree"
	dsig "github.com/russellhaering/goxmldsig"
)

// The enveloped XML Digital Signatures of the DICT's API ("Assinatura
// digital"): every request that adds or changes information carries one,
// a Signature child of its root element, by the bank's certificate; every
// answer of the DICT carries one by the DICT's, which the client verifies
// before it reads anything of the answer. Both are goxmldsig's: the client
// builds and reads XML, never signatures, by hand.

// newSigningContext signs with key, the certificate cert named in the
// signature's KeyInfo: RSA (or ECDSA) with SHA-256, exclusive XML
// canonicalization, the enveloped-signature transform.
func newSigningContext(key crypto.Signer, cert *x509.Certificate) (*dsig.SigningContext, error) {
	sc, err := dsig.NewSigningContext(key, [][]byte{cert.Raw})
	if err != nil {
		return nil, fmt.Errorf("dict signing context: %w", err)
	}
	sc.Canonicalizer = dsig.MakeC14N10ExclusiveCanonicalizerWithPrefixList("")
	return sc, nil
}

// newValidationContext accepts a signature by one of certs only (the
// DICT's signing certificates, compared whole, not chained to a CA: a
// certificate of the RSFN's CA that is not the DICT's must not sign the
// DICT's answers).
func newValidationContext(certs []*x509.Certificate) *dsig.ValidationContext {
	return dsig.NewDefaultValidationContext(&dsig.MemoryX509CertificateStore{Roots: certs})
}

// signedXML marshals v (a request whose root is its element) and signs it
// enveloped, the Signature the root's first child, where every example of
// the specification puts it (goxmldsig's SignEnveloped would append it;
// the enveloped-signature transform takes it out before the digest, so
// its place changes nothing signed, only what a strict reader at the DICT
// expects to find first). The bytes it
// returns are the ones signed as any XML parser reads them: a carriage
// return in a text is written as the character reference &#xD;, since a
// raw one is read as a line feed (XML 1.0 §2.11) and the DICT would digest
// another text than the one signed. (The free texts are normalised before
// they get here, NormalizeDetails; this holds for any text.)
func signedXML(sc *dsig.SigningContext, v any) ([]byte, error) {
	raw, err := xml.Marshal(v)
	if err != nil {
		return nil, fmt.Errorf("encode: %w", err)
	}
	doc := etree.NewDocument()
	if err := doc.ReadFromBytes(raw); err != nil {
		return nil, fmt.Errorf("encode: %w", err)
	}
	signed := doc.Root()
	sig, err := sc.ConstructSignature(signed, true)
	if err != nil {
		return nil, fmt.Errorf("sign: %w", err)
	}
	signed.InsertChildAt(0, sig)
	out := etree.NewDocument()
	out.WriteSettings.CanonicalText = true
	out.CreateProcInst("xml", `version="1.0" encoding="UTF-8"`)
	out.SetRoot(signed)
	return out.WriteToBytes()
}

// verified returns what the DICT's signature of body covers, and only
// that: the root element, its Signature removed, as XML. An answer that
// is not XML, has no signature, or one that is not the DICT's or does not
// match is an error (a reason for a SignatureError).
func verified(vc *dsig.ValidationContext, body []byte) ([]byte, *etree.Element, string, error) {
	doc := etree.NewDocument()
	if err := doc.ReadFromBytes(body); err != nil || doc.Root() == nil {
		return nil, nil, "not XML", err
	}
	el, err := vc.Validate(doc.Root())
	if errors.Is(err, dsig.ErrMissingSignature) {
		return nil, nil, "unsigned", nil
	}
	if err != nil {
		return nil, nil, "signature invalid", err
	}
	out := etree.NewDocument()
	out.SetRoot(el)
	b, err := out.WriteToBytes()
	if err != nil {
		return nil, nil, "signed content unreadable", err
	}
	return b, el, "", nil
}
