package main

import (
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"net/http"
	"time"

	"github.com/pixbank/pix/internal/cli"
	"github.com/pixbank/pix/internal/config"
	"github.com/pixbank/pix/internal/psp"
)

// pspAPISetting is the PSP's API Pix, as pixd's PSP_URL; the client's other
// settings (PSP_OAUTH_*, PSP_CLIENT_*, PSP_TLS_*, PSP_CA_FILE) come from the
// environment, as pixd reads them.
var pspAPISetting = setting{flag: "psp-url", env: "PSP_URL", def: config.Default().PSPURL,
	usage: "the PSP's API Pix base URL (its path kept: https://psp.example/api/v2)"}

var pspWebhookCommand = &command{
	name: "psp webhook", args: "set <chave> <url> | get <chave> | delete <chave> [flags]",
	summary: "register, show or remove our webhook at the PSP for a DICT key",
	about: `Registers (set: PUT /webhook/{chave} {"webhookUrl": url}), shows (get: GET
/webhook/{chave}) or removes (delete: DELETE /webhook/{chave}) the webhook
through which the PSP notifies the PIX received on a key: it posts them to
<url>/pix, over mutual TLS (docs/webhooks.md). The PSP notifies only the PIX
of a charge (a txid); the catch-up lists the others (docs/operations.md).

It calls the PSP as pixd's worker does, with the same settings read from
the environment: PSP_URL, PSP_TIMEOUT, PSP_OAUTH_TOKEN_URL, PSP_CLIENT_ID,
PSP_CLIENT_SECRET or PSP_CLIENT_SECRET_FILE, PSP_OAUTH_SCOPES (webhook.read
and webhook.write are needed), PSP_TLS_CERT_FILE, PSP_TLS_KEY_FILE,
PSP_CA_FILE (docs/configuration.md, "PSP client").
`,
	problem:  "the PSP refused the request (400 WebhookOperacaoInvalida: not a key of ours, a URL it does not take), or has no webhook for the key (get, delete)",
	settings: []setting{pspAPISetting},
	output:   true,
	define: func(*flag.FlagSet) runner {
		return func(ctx context.Context, inv *invocation, args []string) error {
			if len(args) == 0 {
				return usageErrorf("name set, get or delete")
			}
			verb, args := args[0], args[1:]
			want := map[string]int{"set": 2, "get": 1, "delete": 1}[verb]
			switch {
			case want == 0:
				return usageErrorf("%q: want set, get or delete", verb)
			case len(args) < want:
				return usageErrorf("%s: missing argument (set <chave> <url>, get <chave>, delete <chave>)", verb)
			case len(args) > want:
				return usageErrorf("%s: unexpected argument %q", verb, args[want])
			}
			cfg, err := config.FromLookup(func(name string) (string, bool) {
				v := inv.getenv(name)
				return v, v != ""
			})
			if err != nil {
				return usageError(err)
			}
			client, err := psp.New(cfg.PSP())
			if err != nil {
				return usageError(err)
			}
			if !cfg.PSP().Authenticated() {
				fmt.Fprintln(inv.errOut, "pixctl psp webhook: PSP_OAUTH_TOKEN_URL unset: no OAuth 2.0 token is sent (a simulator without authentication)")
			}
			return pspWebhook(ctx, client, verb, args, inv.json, inv.out)
		}
	},
}

// pspWebhook runs one verb of pixctl psp webhook.
func pspWebhook(ctx context.Context, c psp.WebhookRegistrar, verb string, args []string, asJSON bool, out io.Writer) error {
	chave := args[0]
	switch verb {
	case "set":
		if err := c.SetWebhook(ctx, chave, args[1]); err != nil {
			return pspCommandError(err)
		}
		if asJSON {
			return json.NewEncoder(out).Encode(map[string]string{"chave": chave, "webhookUrl": args[1]})
		}
		_, err := fmt.Fprintf(out, "webhook of %s: %s (the PSP posts to %s/pix)\n", chave, args[1], args[1])
		return err
	case "get":
		w, err := c.GetWebhook(ctx, chave)
		if err != nil {
			return pspCommandError(err)
		}
		if asJSON {
			return json.NewEncoder(out).Encode(w)
		}
		_, err = fmt.Fprintf(out, "webhook of %s: %s, registered %s\n", chave, w.WebhookURL, w.CreatedAt.Format(time.RFC3339))
		return err
	default:
		if err := c.DeleteWebhook(ctx, chave); err != nil {
			return pspCommandError(err)
		}
		if asJSON {
			return json.NewEncoder(out).Encode(map[string]string{"chave": chave, "deleted": "true"})
		}
		_, err := fmt.Fprintf(out, "webhook of %s removed\n", chave)
		return err
	}
}

// pspCommandError gives a PSP call's error its exit status, as the API's
// answers get theirs (check): a request the client would not send is a
// usage error (2); the PSP's refusal of the request, or no such webhook, a
// problem found (1); credentials refused (401, 403 AcessoNegado, the token
// endpoint refusing our client) and no answer, could not ask (3).
func pspCommandError(err error) error {
	var refused *psp.RequestError
	switch psp.Classify(err) {
	case psp.AnswerNotFound:
		return cli.WithStatus(cli.ExitProblem, err)
	case psp.AnswerRequestRefused, psp.AnswerAlreadySubmitted, psp.AnswerRefundRefused:
		if !errors.As(err, &refused) {
			return unavailable(err) // the token endpoint refused our client
		}
		switch refused.StatusCode {
		case 0:
			return usageError(err)
		case http.StatusUnauthorized, http.StatusForbidden:
			return unavailable(err)
		}
		return cli.WithStatus(cli.ExitProblem, err)
	}
	return unavailable(err)
}
