package devauth

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"sync"
	"time"

	"github.com/pixbank/pix/internal/auth"
)

// The development issuer's names, unless AUTH_ISSUER and AUTH_AUDIENCE
// say otherwise. The API verifies tokens of the issuer and audience it is
// given: `make run` gives it these.
const (
	DefaultIssuer   = "pix-dev-issuer"
	DefaultAudience = "pix-api"
)

// keyFile is the private key's file in the issuer's directory (auth's
// devKeyFile): its presence says the issuer has been set up.
const keyFile = "issuer-key.pem"

// Settings name a development issuer: the directory of its key pair and
// the iss and aud of its tokens.
type Settings struct {
	KeyDir   string
	Issuer   string
	Audience string
}

// FromEnv reads AUTH_DEV_KEY_DIR (default the service's, .data/auth),
// AUTH_ISSUER and AUTH_AUDIENCE (defaults DefaultIssuer, DefaultAudience);
// getenv is os.Getenv or a stand-in.
func FromEnv(getenv func(string) string) Settings {
	or := func(name, def string) string {
		if v := getenv(name); v != "" {
			return v
		}
		return def
	}
	return Settings{
		KeyDir:   or("AUTH_DEV_KEY_DIR", auth.DevKeyDir),
		Issuer:   or("AUTH_ISSUER", DefaultIssuer),
		Audience: or("AUTH_AUDIENCE", DefaultAudience),
	}
}

// JWKSFile is the JWKS document of the issuer's public key: the API's
// AUTH_JWKS_FILE.
func (s Settings) JWKSFile() string { return filepath.Join(s.KeyDir, auth.DevJWKSFile) }

// Exists reports whether the issuer's key pair has been created.
func (s Settings) Exists() bool {
	for _, name := range []string{keyFile, auth.DevJWKSFile} {
		if _, err := os.Stat(filepath.Join(s.KeyDir, name)); errors.Is(err, fs.ErrNotExist) {
			return false
		}
	}
	return true
}

// Open loads the issuer, creating its key pair on first use.
func (s Settings) Open() (*auth.DevIssuer, error) {
	if s.KeyDir == "" || s.Issuer == "" || s.Audience == "" {
		return nil, errors.New("development issuer: a key directory, an issuer and an audience are needed")
	}
	iss, err := auth.OpenDevIssuer(s.KeyDir, s.Issuer, s.Audience)
	if err != nil {
		return nil, fmt.Errorf("%w (AUTH_DEV_KEY_DIR=%s)", err, s.KeyDir)
	}
	return iss, nil
}

// OpenExisting loads the issuer if its key pair exists, without creating
// one: nil, nil when it does not.
func (s Settings) OpenExisting() (*auth.DevIssuer, error) {
	if !s.Exists() {
		return nil, nil
	}
	return s.Open()
}

// APIEnv is the environment of an API that requires tokens of this
// issuer: AUTH_REQUIRED, AUTH_ISSUER, AUTH_AUDIENCE, AUTH_JWKS_FILE and
// AUTH_DEV_KEY_DIR.
func (s Settings) APIEnv() []string {
	return []string{
		"AUTH_REQUIRED=true",
		"AUTH_ISSUER=" + s.Issuer,
		"AUTH_AUDIENCE=" + s.Audience,
		"AUTH_JWKS_FILE=" + s.JWKSFile(),
		"AUTH_DEV_KEY_DIR=" + s.KeyDir,
	}
}

// Tokens mints the tokens of one spec for a client that keeps sending
// requests: the same token until less than a third of its lifetime is
// left (a request never leaves with a token about to expire), then a new
// one with the same subject, so that the client's Idempotency-Keys stay
// its own. Safe for concurrent use.
type Tokens struct {
	issuer *auth.DevIssuer
	spec   auth.TokenSpec
	now    func() time.Time

	mu      sync.Mutex
	token   string
	renewAt time.Time
}

// NewTokens mints tokens of spec with issuer; now may be nil (time.Now).
func NewTokens(issuer *auth.DevIssuer, spec auth.TokenSpec, now func() time.Time) *Tokens {
	if now == nil {
		now = time.Now
	}
	return &Tokens{issuer: issuer, spec: spec, now: now}
}

// Token returns a token valid for at least a third of the spec's TTL.
func (t *Tokens) Token() (string, error) {
	t.mu.Lock()
	defer t.mu.Unlock()
	now := t.now()
	if t.token != "" && now.Before(t.renewAt) {
		return t.token, nil
	}
	tok, err := t.issuer.Mint(t.spec, now)
	if err != nil {
		return "", err
	}
	t.token, t.renewAt = tok, now.Add(t.spec.TTL*2/3)
	return tok, nil
}
