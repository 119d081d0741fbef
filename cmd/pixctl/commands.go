package main

import (
	"context"
	"flag"
	"fmt"
	"io"
	"slices"
	"strings"
	"time"

	"github.com/pixbank/pix/internal/cli"
	"github.com/pixbank/pix/internal/config"
)

// command is one pixctl command: how it is called, what its help says, the
// settings it reads, and what it does.
type command struct {
	name    string // as typed after pixctl: "show", "events tail"
	args    string // what follows the name in its usage line
	summary string // its line in pixctl help
	about   string // its help, after the usage line
	// problem says when it exits 1 (cli.ExitProblem).
	problem  string
	settings []setting
	// output: it takes -o text|json.
	output bool
	// define declares the command's own flags on fs and returns what runs
	// it, given the positional arguments, once the flags are parsed.
	define func(fs *flag.FlagSet) runner
}

type runner func(ctx context.Context, inv *invocation, args []string) error

// setting is a value a command reads from its flag, else from the
// environment, else its default.
type setting struct {
	flag, env, def, usage string
	// hides is another variable of the same setting, which the flag
	// overrides too (ADMIN_TOKEN_FILE).
	hides string
	// otherwise says what stands in for a setting without a default.
	otherwise string
}

// The settings of the commands.
var (
	apiURLSetting     = setting{flag: "api-url", env: "PIX_API_URL", def: "http://127.0.0.1:8080", usage: "the PIX API's base URL"}
	adminTokenSetting = setting{flag: "admin-token", env: "ADMIN_TOKEN", hides: "ADMIN_TOKEN_FILE",
		usage:     "the admin routes' token: the static admin token, or a JWT of scope pix:admin (prefer the environment: a flag shows in the process list)",
		otherwise: "a pix:admin token of the development issuer, when its key pair exists"}
	customerTokenSetting = setting{flag: "token", env: "PIX_TOKEN", usage: "the customer routes' bearer token",
		otherwise: "one the development issuer mints per call, for the accounts it acts for"}
	natsURLSetting   = setting{flag: "nats-url", env: "NATS_URL", def: "nats://127.0.0.1:4222", usage: "the NATS server whose JetStream holds the events"}
	devKeyDirSetting = setting{flag: "dev-key-dir", env: "AUTH_DEV_KEY_DIR", def: config.Default().AuthDevKeyDir,
		usage: "the development issuer's key pair, whose tokens name $AUTH_ISSUER (default pix-dev-issuer) and $AUTH_AUDIENCE (default pix-api)"}
)

// help is the setting's line in a command's help.
func (s setting) help() string {
	env := "$" + s.env
	if s.hides != "" {
		env += ", or the content of the file $" + s.hides + " names"
	}
	def := s.def
	if def == "" {
		def = s.otherwise
	}
	return fmt.Sprintf("%s (else %s; else %s)", s.usage, env, def)
}

// adminSettings are the settings of a command that calls the admin routes,
// customerSettings those of one that calls the customer routes too.
var (
	adminSettings    = []setting{apiURLSetting, adminTokenSetting, devKeyDirSetting}
	customerSettings = []setting{apiURLSetting, adminTokenSetting, customerTokenSetting, devKeyDirSetting}
)

// invocation is what a command runs with.
type invocation struct {
	out, errOut io.Writer
	// getenv is the environment with the command line's settings over it.
	getenv func(string) string
	now    func() time.Time
	// json: -o json.
	json bool
}

// get is a setting's value: its flag's, else the environment's, else its
// default.
func (inv *invocation) get(s setting) string {
	if v := inv.getenv(s.env); v != "" {
		return v
	}
	return s.def
}

// Usage errors are the command's caller's (exit 2): the command prints its
// usage after them.
func usageError(err error) error { return cli.WithStatus(cli.ExitUsage, err) }

func usageErrorf(format string, args ...any) error { return usageError(fmt.Errorf(format, args...)) }

// asksHelp reports whether args ask for help anywhere before a "--": a help
// flag after a positional argument (pixctl show E123 -h) is one too, and no
// command runs on one.
func asksHelp(args []string) bool {
	for _, a := range args {
		if a == "--" {
			return false
		}
		if cli.IsHelp(a) {
			return true
		}
	}
	return false
}

// flagSet is the command's flag set: its own flags, -o when it prints an
// answer, and its settings. It reports nothing itself: run prints usage.
func (c *command) flagSet() (*flag.FlagSet, runner, *string, map[string]*string) {
	fs := flag.NewFlagSet("pixctl "+c.name, flag.ContinueOnError)
	fs.SetOutput(io.Discard)
	run := c.define(fs)
	var format *string
	if c.output {
		format = fs.String("o", "text", "output: text, or json (the API's answer as it is, one JSON value a line)")
	}
	values := map[string]*string{}
	for _, s := range c.settings {
		values[s.env] = fs.String(s.flag, "", s.help())
	}
	return fs, run, format, values
}

// help prints the command's usage: what it does, its flags and settings, and
// its exit statuses.
func (c *command) help(w io.Writer) {
	fmt.Fprintf(w, "usage: pixctl %s", c.name)
	if c.args != "" {
		fmt.Fprintf(w, " %s", c.args)
	}
	fmt.Fprintf(w, "\n\n%s", c.about)
	fs, _, _, _ := c.flagSet()
	fs.SetOutput(w)
	flags := 0
	fs.VisitAll(func(*flag.Flag) { flags++ })
	if flags > 0 {
		fmt.Fprintln(w, "\nflags (a flag's value over the environment's, over the default):")
		fs.PrintDefaults()
	}
	fmt.Fprintf(w, "\nexit status: 0 done; 1 %s; 2 usage (unknown flag, missing argument, bad setting); 3 could not ask (network, timeout, the service's 5xx, credentials refused)\n", c.problem)
}

// parseInterspersed parses args with fs, flags before or after the
// positional arguments (pixctl refund-status <id> -account X), which it
// returns; everything after "--" is positional.
func parseInterspersed(fs *flag.FlagSet, args []string) ([]string, error) {
	var positional []string
	for {
		if err := fs.Parse(args); err != nil {
			return nil, err
		}
		rest := fs.Args()
		if len(rest) == 0 {
			return positional, nil
		}
		if consumed := len(args) - len(rest); consumed > 0 && args[consumed-1] == "--" {
			return append(positional, rest...), nil
		}
		positional = append(positional, rest[0])
		args = rest[1:]
	}
}

// run runs the command with its arguments (those after its name): its
// help on a help flag anywhere, with nothing else done; its usage on
// stderr and status 2 on a usage error.
func (c *command) run(ctx context.Context, args []string, out, errOut io.Writer, getenv func(string) string, now func() time.Time) error {
	if asksHelp(args) {
		c.help(out)
		return nil
	}
	fs, run, format, values := c.flagSet()
	positional, err := parseInterspersed(fs, args)
	if err == nil && format != nil && !slices.Contains([]string{"text", "json"}, *format) {
		err = fmt.Errorf("-o: %q is neither text nor json", *format)
	}
	if err == nil {
		inv := &invocation{out: out, errOut: errOut, now: now, json: format != nil && *format == "json",
			getenv: func(name string) string {
				for _, s := range c.settings {
					switch {
					case *values[s.env] == "":
					case name == s.env:
						return *values[s.env]
					case name == s.hides:
						return ""
					}
				}
				return getenv(name)
			}}
		err = run(ctx, inv, positional)
		if cli.Status(err) != cli.ExitUsage {
			return err
		}
	}
	fmt.Fprintf(errOut, "pixctl %s: %v\n\n", c.name, strings.TrimPrefix(err.Error(), "pixctl "+c.name+": "))
	c.help(errOut)
	return cli.Exit(cli.ExitUsage)
}

// group is a command with subcommands (pixctl events).
type group struct {
	name, summary string
	commands      []*command
}
