package auth

import (
	"crypto/ed25519"
	"crypto/rand"
	"crypto/sha256"
	"crypto/x509"
	"encoding/base64"
	"encoding/json"
	"encoding/pem"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/MicahParks/jwkset"
	"github.com/golang-jwt/jwt/v5"
)

// DevIssuer is the development token issuer `make run` sets up: an Ed25519
// key pair kept under .data/ and its JWKS file, from which the API reads
// the public key. It stands in for the bank's identity provider; its keys
// never leave the developer's machine and never serve production.
type DevIssuer struct {
	key      ed25519.PrivateKey
	keyID    string
	Issuer   string
	Audience string
}

// DevKeyDir is where the service keeps its development issuer unless
// AUTH_DEV_KEY_DIR says otherwise (config.Default, pixctl and devauth read it
// here).
const DevKeyDir = ".data/auth"

// Files of a development issuer's directory.
const (
	devKeyFile  = "issuer-key.pem"
	DevJWKSFile = "jwks.json"
)

// OpenDevIssuer loads the development issuer kept in dir, creating its key
// pair and JWKS file on first use.
func OpenDevIssuer(dir, issuer, audience string) (*DevIssuer, error) {
	keyPath := filepath.Join(dir, devKeyFile)
	b, err := os.ReadFile(keyPath)
	if errors.Is(err, fs.ErrNotExist) {
		if err := createDevKeys(dir); err != nil {
			return nil, err
		}
		b, err = os.ReadFile(keyPath)
	}
	if err != nil {
		return nil, fmt.Errorf("development issuer key: %w", err)
	}
	block, _ := pem.Decode(b)
	if block == nil {
		return nil, fmt.Errorf("development issuer key: %s holds no PEM block", keyPath)
	}
	parsed, err := x509.ParsePKCS8PrivateKey(block.Bytes)
	if err != nil {
		return nil, fmt.Errorf("development issuer key: %w", err)
	}
	key, ok := parsed.(ed25519.PrivateKey)
	if !ok {
		return nil, fmt.Errorf("development issuer key: %s is not an Ed25519 key", keyPath)
	}
	return &DevIssuer{key: key, keyID: keyID(key.Public().(ed25519.PublicKey)), Issuer: issuer, Audience: audience}, nil
}

// createDevKeys writes a new key pair: the private key readable by its
// owner only, and the JWKS of its public key.
func createDevKeys(dir string) error {
	pub, priv, err := ed25519.GenerateKey(rand.Reader)
	if err != nil {
		return fmt.Errorf("generate development issuer key: %w", err)
	}
	der, err := x509.MarshalPKCS8PrivateKey(priv)
	if err != nil {
		return fmt.Errorf("encode development issuer key: %w", err)
	}
	jwks, err := JWKS(keyID(pub), pub)
	if err != nil {
		return err
	}
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return fmt.Errorf("development issuer: %w", err)
	}
	if err := os.WriteFile(filepath.Join(dir, DevJWKSFile), jwks, 0o644); err != nil {
		return fmt.Errorf("development issuer JWKS: %w", err)
	}
	keyPEM := pem.EncodeToMemory(&pem.Block{Type: "PRIVATE KEY", Bytes: der})
	if err := os.WriteFile(filepath.Join(dir, devKeyFile), keyPEM, 0o600); err != nil {
		return fmt.Errorf("development issuer key: %w", err)
	}
	return nil
}

// JWKS is the JSON Web Key Set document of one public signature key.
func JWKS(kid string, pub any) ([]byte, error) {
	meta := jwkset.JWKMetadataOptions{KID: kid, USE: jwkset.UseSig}
	if _, ok := pub.(ed25519.PublicKey); ok {
		meta.ALG = jwkset.AlgEdDSA
	}
	k, err := jwkset.NewJWKFromKey(pub, jwkset.JWKOptions{Metadata: meta})
	if err != nil {
		return nil, fmt.Errorf("encode JWKS: %w", err)
	}
	b, err := json.MarshalIndent(jwkset.JWKSMarshal{Keys: []jwkset.JWKMarshal{k.Marshal()}}, "", "  ")
	if err != nil {
		return nil, fmt.Errorf("encode JWKS: %w", err)
	}
	return append(b, '\n'), nil
}

// keyID names a public key by its digest, so that a new key pair gets a
// new kid.
func keyID(pub ed25519.PublicKey) string {
	sum := sha256.Sum256(pub)
	return "dev-" + base64.RawURLEncoding.EncodeToString(sum[:9])
}

// TokenSpec is what a minted token says.
type TokenSpec struct {
	Subject  string
	Scopes   []string
	Accounts []string
	TTL      time.Duration
}

// SignClaims signs any claims with the issuer's key and kid: for tests that
// need a token Mint would never make (no exp, a future iat, another iss).
func (d *DevIssuer) SignClaims(c jwt.MapClaims) (string, error) {
	t := jwt.NewWithClaims(jwt.SigningMethodEdDSA, c)
	t.Header["kid"] = d.keyID
	s, err := t.SignedString(d.key)
	if err != nil {
		return "", fmt.Errorf("sign token: %w", err)
	}
	return s, nil
}

// KeyID is the kid of the issuer's key.
func (d *DevIssuer) KeyID() string { return d.keyID }

// Mint signs a token for spec, valid from now for spec.TTL.
func (d *DevIssuer) Mint(spec TokenSpec, now time.Time) (string, error) {
	if spec.Subject == "" || spec.TTL <= 0 {
		return "", errors.New("a token needs a subject and a positive lifetime")
	}
	if ReservedSubject(spec.Subject) {
		return "", fmt.Errorf("a token's subject may not start with %s (the service's own callers'): a verifier refuses it", ReservedSubjectPrefix)
	}
	t := jwt.NewWithClaims(jwt.SigningMethodEdDSA, claims{
		RegisteredClaims: jwt.RegisteredClaims{
			Issuer:    d.Issuer,
			Subject:   spec.Subject,
			Audience:  jwt.ClaimStrings{d.Audience},
			IssuedAt:  jwt.NewNumericDate(now),
			NotBefore: jwt.NewNumericDate(now),
			ExpiresAt: jwt.NewNumericDate(now.Add(spec.TTL)),
		},
		Scope:    strings.Join(spec.Scopes, " "),
		Accounts: spec.Accounts,
	})
	t.Header["kid"] = d.keyID
	s, err := t.SignedString(d.key)
	if err != nil {
		return "", fmt.Errorf("sign token: %w", err)
	}
	return s, nil
}
