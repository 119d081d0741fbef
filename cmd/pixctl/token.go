package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/pixbank/pix/internal/auth"
	"github.com/pixbank/pix/internal/tooling/devauth"
)

// customerTokenTTL is the lifetime of the tokens pixctl mints for its own
// requests: a command's, renewed if it runs longer (the demo).
const customerTokenTTL = 5 * time.Minute

// knownScopes are the scopes a token may grant.
var knownScopes = []string{auth.ScopeRead, auth.ScopeWrite, auth.ScopeAdmin}

// accountList is a repeatable, comma-separated -account flag.
type accountList []string

func (l *accountList) String() string { return strings.Join(*l, ",") }

func (l *accountList) Set(v string) error {
	for _, a := range strings.Split(v, ",") {
		if a = strings.TrimSpace(a); a != "" && !slices.Contains(*l, a) {
			*l = append(*l, a)
		}
	}
	return nil
}

var tokenCommand = &command{
	name: "token", args: `-account ID [-account ID ...] [-scope "pix:read pix:write"] [-ttl 1h] [-sub NAME] [flags]`,
	summary: "print a bearer token of the development issuer",
	about: `Prints a bearer token of the development issuer for the customer routes
(POST /pix, GET /pix/..., GET /accounts/...), or, with -scope pix:admin,
for the admin routes:

  export TOKEN=$(pixctl token -account acc-0001)
  curl -H "Authorization: Bearer $TOKEN" http://127.0.0.1:8080/accounts/acc-0001

The issuer's key pair is in the development issuer's directory (-dev-key-dir,
$AUTH_DEV_KEY_DIR, default .data/auth), created on first use; its tokens
name $AUTH_ISSUER (default pix-dev-issuer) and $AUTH_AUDIENCE (default
pix-api), which the API must be given, with AUTH_JWKS_FILE=<the
directory>/jwks.json (make run does so). Development only: the key never
leaves this machine.
`,
	problem:  "the key pair could not be read or written",
	settings: []setting{devKeyDirSetting},
	define: func(fs *flag.FlagSet) runner {
		var o tokenOptions
		fs.Var(&o.accounts, "account", "an account the token may act for (repeatable, or comma-separated)")
		fs.StringVar(&o.scope, "scope", auth.ScopeRead+" "+auth.ScopeWrite, "space-separated scopes: pix:read, pix:write, pix:admin")
		fs.DurationVar(&o.ttl, "ttl", time.Hour, "lifetime of the token")
		fs.StringVar(&o.sub, "sub", "", "the token's subject, which Idempotency-Keys are scoped by (default dev-<first account>, or dev-operator)")
		return func(_ context.Context, inv *invocation, args []string) error {
			if len(args) > 0 {
				return usageErrorf("unexpected argument %q", args[0])
			}
			return mintToken(o, inv.getenv, inv.now(), inv.out, inv.errOut)
		}
	},
}

// tokenOptions are pixctl token's flags.
type tokenOptions struct {
	accounts   accountList
	scope, sub string
	ttl        time.Duration
}

// mintToken is pixctl token.
func mintToken(o tokenOptions, getenv func(string) string, now time.Time, out, errOut io.Writer) error {
	scopes := strings.Fields(o.scope)
	if len(scopes) == 0 {
		return usageErrorf("-scope: name at least one of pix:read, pix:write, pix:admin")
	}
	for _, s := range scopes {
		if !slices.Contains(knownScopes, s) {
			return usageErrorf("-scope: unknown scope %q (known: %s)", s, strings.Join(knownScopes, ", "))
		}
	}
	customer := slices.Contains(scopes, auth.ScopeRead) || slices.Contains(scopes, auth.ScopeWrite)
	if customer && len(o.accounts) == 0 {
		return usageErrorf("-account: a token of scope pix:read or pix:write acts for accounts: name at least one (-account acc-0001)")
	}
	if o.ttl <= 0 {
		return usageErrorf("-ttl: %s is not a positive duration such as 15m or 1h", o.ttl)
	}
	subject := o.sub
	switch {
	case subject != "":
	case len(o.accounts) > 0:
		subject = "dev-" + o.accounts[0]
	default:
		subject = "dev-operator"
	}
	settings := devauth.FromEnv(getenv)
	created := !settings.Exists()
	issuer, err := settings.Open()
	if err != nil {
		return err
	}
	if created {
		fmt.Fprintf(errOut, "pixctl: created the development issuer's key pair in %s; the API verifies its tokens with AUTH_ISSUER=%s AUTH_AUDIENCE=%s AUTH_JWKS_FILE=%s\n",
			settings.KeyDir, settings.Issuer, settings.Audience, settings.JWKSFile())
	}
	token, err := issuer.Mint(auth.TokenSpec{Subject: subject, Scopes: scopes, Accounts: o.accounts, TTL: o.ttl}, now)
	if err != nil {
		return err
	}
	_, err = fmt.Fprintln(out, token)
	return err
}

var devIssuerCommand = &command{
	name: "dev-issuer", args: "[-env] [flags]",
	summary: "create the development issuer's key pair; print its JWKS file (-env: the API's AUTH_* settings)",
	about: `Creates the development token issuer's key pair in its directory
(-dev-key-dir, $AUTH_DEV_KEY_DIR, default .data/auth) unless it exists, and
prints the path of its JWKS file, the API's AUTH_JWKS_FILE. With -env it
prints instead the API's settings as shell exports (AUTH_ISSUER, default
pix-dev-issuer; AUTH_AUDIENCE, default pix-api; AUTH_DEV_KEY_DIR; and
AUTH_JWKS_FILE unless AUTH_JWKS_URL is set), the values already in the
environment kept:

  eval "$(pixctl dev-issuer -env)"
`,
	problem:  "the key pair could not be read or written",
	settings: []setting{devKeyDirSetting},
	define: func(fs *flag.FlagSet) runner {
		env := fs.Bool("env", false, "print the API's AUTH_* settings as shell exports")
		return func(_ context.Context, inv *invocation, args []string) error {
			if len(args) > 0 {
				return usageErrorf("unexpected argument %q", args[0])
			}
			return devIssuer(*env, inv.getenv, inv.out)
		}
	},
}

// devIssuer is pixctl dev-issuer.
func devIssuer(env bool, getenv func(string) string, out io.Writer) error {
	settings := devauth.FromEnv(getenv)
	dir, err := filepath.Abs(settings.KeyDir)
	if err != nil {
		return err
	}
	settings.KeyDir = dir
	if _, err := settings.Open(); err != nil {
		return err
	}
	if !env {
		_, err := fmt.Fprintln(out, settings.JWKSFile())
		return err
	}
	exports := [][2]string{{"AUTH_ISSUER", settings.Issuer}, {"AUTH_AUDIENCE", settings.Audience}, {"AUTH_DEV_KEY_DIR", settings.KeyDir}}
	switch {
	case getenv("AUTH_JWKS_URL") != "":
		// The API reads its keys there; it takes one source, not two.
	case getenv("AUTH_JWKS_FILE") != "":
		exports = append(exports, [2]string{"AUTH_JWKS_FILE", getenv("AUTH_JWKS_FILE")})
	default:
		exports = append(exports, [2]string{"AUTH_JWKS_FILE", settings.JWKSFile()})
	}
	for _, e := range exports {
		if _, err := fmt.Fprintf(out, "export %s=%s\n", e[0], shellQuote(e[1])); err != nil {
			return err
		}
	}
	return nil
}

// shellQuote quotes s for a POSIX shell.
func shellQuote(s string) string {
	return "'" + strings.ReplaceAll(s, "'", `'\''`) + "'"
}

// devTokens mints the bearer tokens of pixctl's own requests with the
// development issuer, when its key pair exists: for a customer request,
// exactly the accounts it acts for and the one scope it needs; for an
// admin request without ADMIN_TOKEN, scope pix:admin. A token is minted
// again before it expires; its subject stays the same (dev-<first
// account>, the default of `pixctl token`), so that a retried POST /pix
// replays.
type devTokens struct {
	issuer *auth.DevIssuer
	mu     sync.Mutex
	minted map[string]*devauth.Tokens
}

// openDevTokens is the development issuer of AUTH_DEV_KEY_DIR, nil when
// its key pair does not exist (pixctl never creates one to call an API).
func openDevTokens(getenv func(string) string) (*devTokens, error) {
	issuer, err := devauth.FromEnv(getenv).OpenExisting()
	if err != nil || issuer == nil {
		return nil, err
	}
	return &devTokens{issuer: issuer, minted: map[string]*devauth.Tokens{}}, nil
}

// token is a token of subject for scope and accounts.
func (d *devTokens) token(subject, scope string, accounts []string) (string, error) {
	key := subject + "\x00" + scope + "\x00" + strings.Join(accounts, ",")
	d.mu.Lock()
	t, ok := d.minted[key]
	if !ok {
		t = devauth.NewTokens(d.issuer, auth.TokenSpec{Subject: subject, Scopes: []string{scope}, Accounts: accounts, TTL: customerTokenTTL}, nil)
		d.minted[key] = t
	}
	d.mu.Unlock()
	return t.Token()
}

// customer is a token for a customer request acting for accounts.
func (d *devTokens) customer(scope string, accounts []string) (string, error) {
	if len(accounts) == 0 {
		return "", errors.New("a customer request must name the accounts it acts for, to mint its token")
	}
	return d.token("dev-"+accounts[0], scope, accounts)
}

// admin is a token of scope pix:admin.
func (d *devTokens) admin() (string, error) {
	return d.token("dev-operator", auth.ScopeAdmin, nil)
}
