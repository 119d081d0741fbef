package med

import (
	"context"
	"fmt"
	"time"

	"github.com/pixbank/pix/internal/dict"
	"github.com/pixbank/pix/saga"
	"github.com/pixbank/pix/saga/covered"
)

// Deps are the saga's activities' dependencies (Saga.Deps): the report's
// saga's, and its DICT lister's, each registered as its own struct of
// activities; embedded, so that Deps' methods are every activity of the
// saga.
type Deps struct {
	*Activities
	*Lister
}

// depsOf builds the saga's dependencies from env: both call the DICT as the
// settings configure it (dictOf).
func depsOf(env saga.Env) any {
	s := settings.Of(env.Lookup)
	var d DICT = notConfigured{}
	var l DICTLister = notConfigured{}
	if c := dictOf(env, s); c != nil {
		d, l = signatureCounted{c}, c
	}
	store := storeOf(env, s)
	listed := covered.NewStore(env.Store, ListerName)
	doors := &Doors{Store: store, Temporal: env.Temporal, Log: env.Log}
	return &Deps{
		Activities: &Activities{Store: store, DICT: d, Doors: doors, Log: env.Log, BehindPSP: s.Disabled, Covered: listed},
		Lister:     &Lister{Covered: listed, DICT: l, Window: s.List, Log: env.Log, Quarantine: doors, Doors: doors},
	}
}

// storeOf is the saga's store as the settings s configure it: with the
// DICT (MED_DICT_URL), a report is analysed only when it names BANK_ISPB
// the credited participant; behind a PSP its reports name the PSP's, which
// the bank does not configure, and only ReportedBy and InfractionType are
// checked (Store.toAnalyse).
func storeOf(env saga.Env, s Settings) *Store {
	if s.DICT.BaseURL == "" {
		return NewStore(env.Store)
	}
	return NewStore(env.Store).WithParticipant(s.DICT.Participant)
}

// dictKey keeps the process's one DICT client (saga.Kept): the saga's
// steps and its lister share its connections.
type dictKey struct{}

// dictOf is the DICT client (dict.HTTPClient) the settings s configure,
// built once per process, which says (WARN) when MED_DICT_POLICIES_URL is
// unset; nil with no MED_DICT_URL: MED_DICT_DISABLED=true,
// which pixd's start requires then and which the worker says at its start
// (WARN), or a test's Env that sets nothing; the saga then calls
// notConfigured, which refuses every call unsent. The settings were
// checked at start (CheckSettings): a client that can't be built here is
// wiring that skipped the check, and panics.
func dictOf(env saga.Env, s Settings) *dict.HTTPClient {
	if s.DICT.BaseURL == "" {
		if s.Disabled && env.Log != nil {
			env.Log.Warn("med: MED_DICT_DISABLED=true: no DICT client; an infraction report's run holds its money and goes on the PSP's notices (stopping where only the DICT could answer), and nothing lists the DICT's reports")
		}
		return nil
	}
	return saga.Kept(env.Process, dictKey{}, func() *dict.HTTPClient {
		c, err := dict.New(s.DICT)
		if err != nil {
			panic(fmt.Sprintf("med: the DICT client, its settings unchecked at start: %v", err))
		}
		if s.DICT.PoliciesURL == "" && env.Log != nil {
			env.Log.Warn("med: MED_DICT_POLICIES_URL unset: the rate-limit policies are asked of MED_DICT_URL, which the specification's DICT does not serve them from; " +
				"the lister's reads of its buckets fail and it lists unthrottled (PixMEDDICTBucketUnread)")
		}
		return c
	})
}

// The list of the DICT that is not configured: refused unsent, as its
// other calls (its Schedule is deleted, so only a run begun before calls).

func (notConfigured) WalkInfractionReports(context.Context, dict.ReportQuery, func(dict.InfractionReport) error) (time.Time, error) {
	return time.Time{}, errNotConfigured
}

func (notConfigured) Bucket(context.Context, string) (dict.Bucket, error) {
	return dict.Bucket{}, errNotConfigured
}
