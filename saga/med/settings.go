package med

import (
	"errors"
	"fmt"
	"time"

	"github.com/pixbank/pix/internal/config"
	"github.com/pixbank/pix/internal/dict"
	"github.com/pixbank/pix/saga/covered"
)

// Settings are the saga's own (docs/configuration.md, "MED and the
// DICT"), read from the environment (SettingsFrom): the DICT client's, and
// its lister's Schedule.
// Either the DICT is configured (MED_DICT_URL and
// its certificates) or MED runs without it, said explicitly
// (MED_DICT_DISABLED=true): neither is a mistake pixd refuses at start,
// never a silent fallback.
type Settings struct {
	// Disabled: MED runs without the DICT (MED_DICT_DISABLED=true): a
	// report's run holds its money and goes on the PSP's notices
	// (Activities.BehindPSP), stopping visibly (Report.DICTProblem) where
	// only the DICT could answer, and nothing lists the DICT.
	Disabled bool
	// DICT is the client's configuration: MED_DICT_URL,
	// MED_DICT_POLICIES_URL, MED_DICT_CERT_FILE, MED_DICT_KEY_FILE,
	// MED_DICT_CA_FILE, MED_DICT_SIGNING_CERT_FILE,
	// MED_DICT_SIGNING_KEY_FILE, MED_DICT_VERIFY_CERT_FILE (the DICT's
	// signing certificates), MED_DICT_TIMEOUT; its Participant is BANK_ISPB.
	DICT dict.Config
	// ListInterval is how often the lister's Schedule lists the DICT's
	// reports and refund requests into the saga's doors
	// (MED_DICT_LIST_INTERVAL; 0, or MED_DICT_DISABLED=true: the Schedule
	// deleted). List is its window (covered.Settings): MED_DICT_LIST_OVERLAP,
	// MED_DICT_LIST_LOOKBACK, MED_DICT_LIST_GRACE (at least dict.ListLag, the
	// lists' lag behind the writes; less than the overlap).
	ListInterval time.Duration
	List         covered.Settings
}

// DefaultSettings are the settings of an environment that sets none: no
// DICT (which pixd's start refuses unless MED_DICT_DISABLED=true says so:
// Check).
func DefaultSettings() Settings {
	return Settings{
		DICT:         dict.Config{Participant: config.Default().BankISPB, Timeout: dict.DefaultTimeout},
		ListInterval: time.Minute,
		List:         covered.Settings{Overlap: 2 * time.Minute, Lookback: AnalysisWindow, Grace: 10 * time.Second},
	}
}

// dictVariables are the variables of the DICT client's files and
// addresses, by the field each sets.
func dictVariables(c *dict.Config) []struct {
	name string
	dst  *string
} {
	return []struct {
		name string
		dst  *string
	}{
		{"MED_DICT_URL", &c.BaseURL}, {"MED_DICT_POLICIES_URL", &c.PoliciesURL},
		{"MED_DICT_CERT_FILE", &c.CertFile}, {"MED_DICT_KEY_FILE", &c.KeyFile}, {"MED_DICT_CA_FILE", &c.CAFile},
		{"MED_DICT_SIGNING_CERT_FILE", &c.SigningCertFile}, {"MED_DICT_SIGNING_KEY_FILE", &c.SigningKeyFile},
		{"MED_DICT_VERIFY_CERT_FILE", &c.DICTCertFile},
	}
}

// settings reads the saga's settings, each variable over its default.
var settings = config.SagaSettings[Settings]{What: "med", Defaults: DefaultSettings,
	Read: func(r *config.Settings, s *Settings) {
		r.Bool("MED_DICT_DISABLED", &s.Disabled)
		var set []string
		for _, v := range dictVariables(&s.DICT) {
			if _, ok := r.Lookup(v.name); ok {
				set = append(set, v.name)
			}
			r.Str(v.name, v.dst)
		}
		r.Str("BANK_ISPB", &s.DICT.Participant)
		r.Duration("MED_DICT_TIMEOUT", &s.DICT.Timeout)
		r.Wait("MED_DICT_LIST_INTERVAL", "1m", 0, &s.ListInterval)
		r.Wait("MED_DICT_LIST_OVERLAP", "2m", 0, &s.List.Overlap)
		r.Wait("MED_DICT_LIST_LOOKBACK", "168h", 0, &s.List.Lookback)
		r.Wait("MED_DICT_LIST_GRACE", "10s", 0, &s.List.Grace)
		switch {
		case s.List.Grace < dict.ListLag:
			r.Fail(fmt.Errorf("MED_DICT_LIST_GRACE: %s is less than the %s the DICT's lists may lag its writes", s.List.Grace, dict.ListLag))
		case s.List.Grace >= s.List.Overlap:
			r.Fail(fmt.Errorf("MED_DICT_LIST_GRACE: %s is not less than MED_DICT_LIST_OVERLAP (%s)", s.List.Grace, s.List.Overlap))
		}
		if s.Disabled && len(set) > 0 {
			r.Fail(fmt.Errorf("MED_DICT_DISABLED=true with %v set: MED either reaches the DICT or runs without it; unset one", set))
		}
	}}

// SettingsFrom reads the settings through lookup (os.LookupEnv): a value
// set that does not read is an error, never the default.
func SettingsFrom(lookup func(string) (string, bool)) (Settings, error) { return settings.From(lookup) }

// errNeither: the DICT neither configured nor disabled.
var errNeither = errors.New("MED_DICT_URL: not set: MED reaches the DICT with MED_DICT_URL and its certificates " +
	"(docs/configuration.md, \"MED and the DICT\"); MED_DICT_DISABLED=true runs without it, its reports stopping at their first DICT step")

// CheckSettings is the saga's check at pixd's start (Saga.Settings): the
// settings read, the DICT either configured or disabled (an Env that
// sets neither, a test's, reads as disabled: notConfigured), and, unless
// disabled, the DICT client built from them
// (its certificates and keys read, its addresses and ISPB checked), so
// that a mistake stops the start, not the first call.
func CheckSettings(lookup func(string) (string, bool)) error {
	s, err := settings.From(lookup)
	switch {
	case err != nil || s.Disabled:
		return err
	case s.DICT.BaseURL == "":
		return errNeither
	}
	if _, err := dict.New(s.DICT); err != nil {
		return fmt.Errorf("MED's DICT client (MED_DICT_*, BANK_ISPB): %w", err)
	}
	return nil
}
