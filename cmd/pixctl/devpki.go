package main

import (
	"context"
	"flag"
	"fmt"
	"path/filepath"

	"github.com/pixbank/pix/internal/tooling/devpki"
)

// devPKIDirSetting is where the development PKI of make run lives.
var devPKIDirSetting = setting{flag: "dir", env: "PIX_DEV_PKI_DIR", def: ".data/pki",
	usage: "the development PKI's directory"}

var devPKICommand = &command{
	name: "dev-pki", args: "[flags]",
	summary: "create the development certificates of make run's mutual TLS (PSP, DICT) and the PSP client secret; print their directory",
	about: `Creates in its directory (-dir, $PIX_DEV_PKI_DIR, default .data/pki)
whatever is missing or expires within a day of a development PKI: one
certificate authority (ca.pem) and what it issues, the PSP simulator's server
certificate (psp-server.pem), the bank's client certificate at the PSP
(bank-client.pem), the bank's webhook listener's certificate
(webhook-server.pem), the simulator's client certificate for its webhooks
(psp-client.pem, named pspsim) and the demo's (demo-client.pem, named dev-psp,
for the webhooks pixctl demo posts), the DICT simulator's server certificate
(dict-server.pem), signing certificate (dict-signer.pem) and payer's
participant (dict-payer.pem; the bank is bank-client.pem at the DICT too),
each with its key, and the bank's OAuth 2.0 client secret
(psp-client-secret). What is there and valid is kept. Prints
the directory's absolute path. Development only: production's certificates
come from the bank's PKI and the PSP.
`,
	problem:  "the directory could not be read or written",
	settings: []setting{devPKIDirSetting},
	define: func(*flag.FlagSet) runner {
		return func(_ context.Context, inv *invocation, args []string) error {
			if len(args) > 0 {
				return usageErrorf("unexpected argument %q", args[0])
			}
			dir, err := filepath.Abs(inv.get(devPKIDirSetting))
			if err != nil {
				return err
			}
			if err := devpki.EnsureDir(dir); err != nil {
				return err
			}
			_, err = fmt.Fprintln(inv.out, dir)
			return err
		}
	},
}
