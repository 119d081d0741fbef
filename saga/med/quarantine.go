package med

import (
	"context"
	"embed"
	"errors"
	"fmt"
	"log/slog"
	"strconv"
	"time"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5"
	"github.com/prometheus/client_golang/prometheus"

	"github.com/pixbank/pix/db"
	"github.com/pixbank/pix/internal/rowscan"
	"github.com/pixbank/pix/saga"
	"github.com/pixbank/pix/saga/sagakit"
)

// The quarantine of the DICT's lists (pix_med_quarantine): what the lister
// could not take in (Lister.quarantine), until a later listing takes the
// item in (Store.ClearQuarantined) or an operator clears it by hand
// (Store.ResolveQuarantined: pixctl med quarantine clear). While a row is
// there, the gauge pix_med_dict_items_quarantined counts it and
// PixMEDDICTItemQuarantined pages; once cleared, the alert stops.

//go:embed quarantine.sql
var quarantineFiles embed.FS

// quarantineSQL holds the statements of quarantine.sql.
var quarantineSQL struct{ Clear, Held, Stop, Wake, List, Resolve, Count, RefundsFrom string }

func init() { db.BindQueries(quarantineFiles, "quarantine.sql", &quarantineSQL) }

// ErrQuarantineNotFound: no quarantined copy of the kind, id and
// LastModified given.
var ErrQuarantineNotFound = errors.New("no quarantined item of the DICT's lists with this kind, id and LastModified")

// quarantinedID is the id an item is quarantined under: the DICT's uuid
// in its canonical form, or (an item refused may carry anything as its
// id) its id quoted (PostgreSQL's text takes no NUL nor invalid UTF-8),
// cut to maxQuarantinedID.
func quarantinedID(id string) string {
	if u, err := uuid.Parse(id); err == nil {
		return u.String()
	}
	if id = strconv.QuoteToASCII(id); len(id) > maxQuarantinedID {
		id = id[:maxQuarantinedID]
	}
	return id
}

// QuarantineCleared is what a clear of the quarantine did: the
// LastModified of each row cleared (Rows), and the open reports whose runs
// had stopped at the DICT on one of those copies (Woken: NoteProblemOn,
// the report unmoved since), their generation bumped in the clear's
// transaction so that the run's stopped wait ends (waits.stopped) rather
// than at its retry time: what stopped them is gone. Signalled after the
// commit (wakeStopped); a signal lost is the run's next look, which finds
// the generation moved.
type QuarantineCleared struct {
	Rows  []time.Time
	Woken []uuid.UUID
}

// ClearQuarantined clears the quarantine of an item the lister has taken
// in: its rows of the copy modified at through or before it, never a
// newer copy's (a lister late with an older copy clears nothing of what
// was quarantined since), and wakes the runs stopped on those rows
// (QuarantineCleared). The lister's is Doors.ClearQuarantined, which
// signals them.
func (s *Store) ClearQuarantined(ctx context.Context, kind, id string, through time.Time) (QuarantineCleared, error) {
	return s.clearQuarantine(ctx, "clear", quarantineSQL.Clear, kind, quarantinedID(id), through)
}

// clearQuarantine runs the clear stmt (Clear, Resolve) of kind and id
// (as recorded) through through, then, in its transaction, bumps the
// generation of the reports stopped on a row it cleared (Wake). Lock
// order (quarantine.sql): the rows it deletes first, then the reports, in
// id order; a stop (NoteProblemOn) takes its copy's row before its
// report's too, so a stop and a clear at once never deadlock.
func (s *Store) clearQuarantine(ctx context.Context, what, stmt, kind, id string, through time.Time) (QuarantineCleared, error) {
	var out QuarantineCleared
	err := s.store.InTx(ctx, func(tx pgx.Tx) error {
		rs, err := tx.Query(ctx, stmt, kind, id, through)
		if err != nil {
			return err
		}
		if out.Rows, err = pgx.CollectRows(rs, pgx.RowTo[time.Time]); err != nil || len(out.Rows) == 0 {
			return err
		}
		rs, err = tx.Query(ctx, quarantineSQL.Wake, kind, id, out.Rows)
		if err != nil {
			return err
		}
		out.Woken, err = pgx.CollectRows(rs, pgx.RowTo[uuid.UUID])
		return err
	})
	if err != nil {
		return QuarantineCleared{}, db.Classify(fmt.Errorf("%s the quarantine of %s %s: %w", what, kind, id, err))
	}
	return out, nil
}

// wakeStopped signals the runs a clear of the quarantine woke (c.Woken),
// after its commit: each reads its report, finds the generation moved and
// tries its step again. One lost is logged; the generation still ends the
// wait at the run's next look (its retry time at the latest).
func wakeStopped(ctx context.Context, temporal sagakit.Signaller, log *slog.Logger, kind, id string, c QuarantineCleared) {
	wakes := make([]sagakit.AWake, 0, len(c.Woken))
	for _, r := range c.Woken {
		wakes = append(wakes, sagakit.AWake{WorkflowID: WorkflowID(r.String()), Attrs: []any{"report_id", r, "kind", kind, "dict_id", id}})
	}
	sagakit.WakeAll(ctx, temporal, log, ChangedSignal,
		"quarantine cleared, the run stopped on it not woken: it tries its step again at its next look", wakes)
}

// RefundQuarantinedFrom returns a refund request quarantined and not
// cleared that could be the request of a report whose requests are
// modified from from (at or after it, or of a LastModified unread): its
// DICT id and reason; ok false when there is none. The expiry never
// releases while there is one (Activities.ExpireRequest).
func (s *Store) RefundQuarantinedFrom(ctx context.Context, from time.Time) (id, reason string, ok bool, err error) {
	err = s.store.Pool().QueryRow(ctx, quarantineSQL.RefundsFrom, from).Scan(&id, &reason)
	if errors.Is(err, pgx.ErrNoRows) {
		return "", "", false, nil
	}
	if err != nil {
		return "", "", false, db.Classify(fmt.Errorf("read the quarantined refund requests from %s: %w", from.Format(time.RFC3339Nano), err))
	}
	return id, reason, true, nil
}

// QuarantinedItem is a row of pix_med_quarantine as the operator route
// answers it: the item's kind, DICT id, LastModified (where the lister met
// it when it had none readable) and the code of why, never the DICT's
// texts.
type QuarantinedItem struct {
	Kind           string    `db:"kind" json:"kind"`
	DICTID         string    `db:"dict_id" json:"dict_id"`
	DICTModifiedAt time.Time `db:"dict_modified_at" json:"dict_modified_at"`
	Reason         string    `db:"reason" json:"reason"`
	FirstListedAt  time.Time `db:"first_listed_at" json:"first_listed_at"`
	LastListedAt   time.Time `db:"last_listed_at" json:"last_listed_at"`
}

// QuarantineKey is the sort key of the list of quarantined items (the
// table's primary key). A page's cursor holds its last row's.
type QuarantineKey struct {
	Kind           string    `json:"kind"`
	DICTID         string    `json:"dict_id"`
	DICTModifiedAt time.Time `json:"dict_modified_at"`
}

// Valid says whether k is a key of the list.
func (k QuarantineKey) Valid() bool {
	return (k.Kind == QuarantinedReport || k.Kind == QuarantinedRefund) && k.DICTID != "" && !k.DICTModifiedAt.IsZero()
}

// QuarantineKeyOf is the sort key of q in the list.
func QuarantineKeyOf(q QuarantinedItem) QuarantineKey {
	return QuarantineKey{Kind: q.Kind, DICTID: q.DICTID, DICTModifiedAt: q.DICTModifiedAt}
}

// QuarantinedItems returns the quarantined items by kind, id and
// LastModified, at most limit, those after the key after (nil: from the
// first).
func (s *Store) QuarantinedItems(ctx context.Context, after *QuarantineKey, limit int) ([]QuarantinedItem, error) {
	var kind, id *string
	var at *time.Time
	if after != nil {
		kind, id, at = &after.Kind, &after.DICTID, &after.DICTModifiedAt
	}
	rs, err := s.store.Pool().Query(ctx, quarantineSQL.List, kind, id, at, limit)
	if err != nil {
		return nil, db.Classify(fmt.Errorf("list the quarantine: %w", err))
	}
	out, err := pgx.CollectRows(rs, rowscan.ByName[QuarantinedItem])
	if err != nil {
		return nil, db.Classify(fmt.Errorf("list the quarantine: %w", err))
	}
	return out, nil
}

// ResolveQuarantined is an operator's clear of an item decided by hand:
// its copy (id as listed) of LastModified through, the one the operator
// read and decided, and the earlier copies whose LastModified was read
// (quarantine.sql Resolve), so that a copy quarantined after the operator
// looked stays and holds the 72 h expiry back (attack review r4 MED-1: a
// clear of every copy released past a newer one). ErrQuarantineNotFound
// when no copy of that LastModified is quarantined; else the LastModified
// of each row cleared and the runs stopped on them, woken
// (QuarantineCleared: the route signals them).
func (s *Store) ResolveQuarantined(ctx context.Context, kind, id string, through time.Time) (QuarantineCleared, error) {
	out, err := s.clearQuarantine(ctx, "resolve", quarantineSQL.Resolve, kind, id, through)
	if err == nil && len(out.Rows) == 0 {
		return QuarantineCleared{}, ErrQuarantineNotFound
	}
	return out, err
}

// quarantineCounts are the items quarantined and not cleared, by kind.
type quarantineCounts struct{ Reports, Refunds int64 }

// quarantineGauges are the items quarantined and not cleared, by kind,
// read at each scrape (PixMEDDICTItemQuarantined pages while one is).
func quarantineGauges(env saga.Env) prometheus.Collector {
	pool := env.Store
	desc := func(kind string) *prometheus.Desc {
		return prometheus.NewDesc("pix_med_dict_items_quarantined",
			"Items of the DICT's lists the MED lister quarantined and no later listing nor operator cleared yet, by kind (pix_med_quarantine; PixMEDDICTItemQuarantined).",
			nil, prometheus.Labels{"kind": kind})
	}
	return &sagakit.ScrapeGauges[quarantineCounts]{
		What: "med quarantine gauges",
		Query: func(ctx context.Context) (quarantineCounts, error) {
			var c quarantineCounts
			err := pool.Pool().QueryRow(ctx, quarantineSQL.Count).Scan(&c.Reports, &c.Refunds)
			return c, db.Classify(err)
		},
		Gauges: []sagakit.Gauge[quarantineCounts]{
			{Desc: desc(QuarantinedReport), Value: func(c quarantineCounts) float64 { return float64(c.Reports) }},
			{Desc: desc(QuarantinedRefund), Value: func(c quarantineCounts) float64 { return float64(c.Refunds) }},
		},
		Log: env.Log,
	}
}
