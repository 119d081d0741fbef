package med_test

import (
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/pixbank/pix/internal/config"
	"github.com/pixbank/pix/internal/dict"
	"github.com/pixbank/pix/internal/tooling/dictsim"
	"github.com/pixbank/pix/saga/med"
	"github.com/pixbank/pix/saga/sagatest"
)

// The settings read: MED_DICT_DISABLED=true with a DICT setting is
// refused (MED reaches the DICT or runs without it).
func TestSettings(t *testing.T) {
	disabled := med.DefaultSettings()
	disabled.Disabled = true
	configured := med.DefaultSettings()
	configured.DICT = dict.Config{BaseURL: "https://dict.example:16422/api/v1", Participant: "87654321",
		CertFile: "c.pem", KeyFile: "k.pem", DICTCertFile: "dict.pem", Timeout: 3e9}
	sagatest.RequireSettings(t, med.SettingsFrom, []sagatest.SettingsCase[med.Settings]{
		{Env: map[string]string{}, Want: med.DefaultSettings()},
		{Env: map[string]string{"MED_DICT_DISABLED": "true"}, Want: disabled},
		{Env: map[string]string{"MED_DICT_DISABLED": "true", "MED_DICT_URL": "https://dict.example", "MED_DICT_CERT_FILE": "c.pem"},
			Err: "MED_DICT_DISABLED=true with [MED_DICT_URL MED_DICT_CERT_FILE] set: MED either reaches the DICT or runs without it; unset one"},
		{Env: map[string]string{"MED_DICT_DISABLED": "soon"}, Err: `MED_DICT_DISABLED: "soon" is not true or false`},
		{Env: map[string]string{"MED_DICT_URL": "https://dict.example:16422/api/v1", "BANK_ISPB": "87654321",
			"MED_DICT_CERT_FILE": "c.pem", "MED_DICT_KEY_FILE": "k.pem", "MED_DICT_VERIFY_CERT_FILE": "dict.pem", "MED_DICT_TIMEOUT": "3s"},
			Want: configured},
		{Env: map[string]string{"MED_DICT_DISABLED": "true", "MED_DICT_LIST_GRACE": "1s"},
			Err: "MED_DICT_LIST_GRACE: 1s is less than the 5s the DICT's lists may lag its writes"},
		{Env: map[string]string{"MED_DICT_DISABLED": "true", "MED_DICT_LIST_GRACE": "2m"},
			Err: "MED_DICT_LIST_GRACE: 2m0s is not less than MED_DICT_LIST_OVERLAP (2m0s)"},
		{Env: map[string]string{"MED_DICT_DISABLED": "true", "MED_DICT_TIMEOUT": "-1s"}, Err: `MED_DICT_TIMEOUT: "-1s" is not a positive duration such as 500ms or 2m`},
	})
}

// pixd's start builds the DICT client from the settings: what can't be
// read or does not go together stops it there, named, never the first
// call; and the DICT neither configured nor disabled stops it too.
func TestCheckSettingsBuildsTheClient(t *testing.T) {
	ts := dictsim.NewTestServer(t, dictsim.Options{})
	env := func(over map[string]string) map[string]string {
		m := map[string]string{
			"MED_DICT_URL": ts.Config.BaseURL, "BANK_ISPB": ts.Config.Participant,
			"MED_DICT_CERT_FILE": ts.Config.CertFile, "MED_DICT_KEY_FILE": ts.Config.KeyFile,
			"MED_DICT_CA_FILE": ts.Config.CAFile, "MED_DICT_VERIFY_CERT_FILE": ts.Config.DICTCertFile,
		}
		for k, v := range over {
			if v == "" {
				delete(m, k)
				continue
			}
			m[k] = v
		}
		return m
	}
	require.NoError(t, med.CheckSettings(config.LookupIn(env(nil))))
	require.NoError(t, med.CheckSettings(config.LookupIn(map[string]string{"MED_DICT_DISABLED": "true"})))
	for name, over := range map[string]map[string]string{
		"a key that can't be read":              {"MED_DICT_KEY_FILE": t.TempDir() + "/none.pem"},
		"no DICT certificate to verify":         {"MED_DICT_VERIFY_CERT_FILE": ""},
		"a plain http DICT":                     {"MED_DICT_URL": "http://127.0.0.1:1/api/v1"},
		"a signing key without its certificate": {"MED_DICT_SIGNING_KEY_FILE": ts.Config.KeyFile},
	} {
		err := med.CheckSettings(config.LookupIn(env(over)))
		require.ErrorContains(t, err, "MED's DICT client (MED_DICT_*, BANK_ISPB)", name)
	}
	require.EqualError(t, med.CheckSettings(config.LookupIn(map[string]string{})), `MED_DICT_URL: not set: MED reaches the DICT with MED_DICT_URL and its certificates `+
		`(docs/configuration.md, "MED and the DICT"); MED_DICT_DISABLED=true runs without it, its reports stopping at their first DICT step`)
	require.ErrorContains(t, med.CheckSettings(config.LookupIn(map[string]string{"MED_DICT_DISABLED": "false"})), "MED_DICT_URL: not set")
}
