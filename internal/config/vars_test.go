package config

import (
	"os"
	"slices"
	"strings"
	"testing"
)

// declared reports whether name is one of Variables, or under one that is
// a prefix (TEMPORAL_GRPC_META_).
func declared(name string) bool {
	return slices.ContainsFunc(Variables, func(v Variable) bool {
		return v.Name == name || strings.HasSuffix(v.Name, "_") && strings.HasPrefix(name, v.Name)
	})
}

// Every variable Load reads is declared in Variables, which pixd's help
// lists, and docs/configuration.md names every one: a variable added to
// Load without its declaration, or its documentation, fails here.
func TestVariablesDeclareWhatLoadReads(t *testing.T) {
	// envconfig reads these for the UI's and the CLI's codec, which the
	// service never uses (temporalConnection drops it).
	ignored := []string{"TEMPORAL_CODEC_ENDPOINT", "TEMPORAL_CODEC_AUTH"}
	read := map[string]bool{}
	// Some variables are read only when others are set: tracing's when it
	// is on, the prefixed headers when the environment holds one.
	for _, env := range []map[string]string{
		{},
		{"OTEL_TRACES_EXPORTER": "otlp", "TEMPORAL_GRPC_META_X_TENANT": "a"},
	} {
		lookup := func(name string) (string, bool) {
			read[name] = true
			v, ok := env[name]
			return v, ok
		}
		environ := func() []string {
			var kv []string
			for k, v := range env {
				kv = append(kv, k+"="+v)
			}
			return kv
		}
		_, _ = load(lookup, environ) //nolint:errcheck // only what it reads matters
	}
	for name := range read {
		if !declared(name) && !slices.Contains(ignored, name) {
			t.Errorf("Load reads %s, which config.Variables does not declare (pixd help and docs/configuration.md list it from there)", name)
		}
	}

	doc, err := os.ReadFile("../../docs/configuration.md")
	if err != nil {
		t.Fatal(err)
	}
	seen := map[string]bool{}
	for _, v := range Variables {
		if seen[v.Name] {
			t.Errorf("%s is declared twice", v.Name)
		}
		seen[v.Name] = true
		if v.Roles == 0 {
			t.Errorf("%s: no role reads it", v.Name)
		}
		if !strings.Contains(string(doc), "`"+v.Name) {
			t.Errorf("docs/configuration.md does not name %s", v.Name)
		}
	}
}

func TestRoleString(t *testing.T) {
	if got := RoleDev.String(); got != "api worker migrate" {
		t.Errorf("RoleDev is %q", got)
	}
	if got := VariablesOf(RoleMigrate); !slices.Equal(got, []string{"DATABASE_URL", "DATABASE_URL_FILE", "DATABASE_MAX_CONNS",
		"MIGRATE_DATABASE_URL", "MIGRATE_DATABASE_URL_FILE", "DATABASE_SERVICE_ROLE", "LOG_LEVEL"}) {
		t.Errorf("migrate reads %q", got)
	}
}
