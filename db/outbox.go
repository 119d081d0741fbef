package db

import (
	"context"
	"fmt"
	"time"

	"github.com/jackc/pgx/v5"
)

// Event types of the outbox, published on the subject pix.events.<type>.
const (
	EventCreditSettled    = "pix.credit.settled"
	EventCreditFailed     = "pix.credit.failed"
	EventTransferDebited  = "pix.transfer.debited"
	EventTransferSettled  = "pix.transfer.settled"
	EventTransferRefunded = "pix.transfer.refunded"
)

// Aggregate types: the events of one aggregate are published in commit order.
const (
	AggregateCredit   = "pix_credit"
	AggregateTransfer = "pix_transfer"
)

// EventSchemaVersion is in every payload; a change a consumer must know of
// raises it.
const EventSchemaVersion = 1

// emitEvent is a statement (for a data-modifying CTE) that writes one
// outbox event per row of from, in the transaction of the state change it
// announces. aggregateID and fields are SQL expressions over from's
// columns; fields are jsonb_build_object's name, value pairs. Only
// constants of this package are ever passed in.
func emitEvent(aggregateType, eventType, from, aggregateID, fields string) string {
	return `INSERT INTO outbox_events (aggregate_type, aggregate_id, event_type, payload)
		SELECT '` + aggregateType + `', ` + aggregateID + `, '` + eventType + `',
		       jsonb_build_object('schema_version', 1, ` + fields + `)
		FROM ` + from
}

// Event is an outbox row as the relay publishes it.
type Event struct {
	ID            string
	Seq           int64
	AggregateType string
	AggregateID   string
	Type          string
	Payload       []byte
	CreatedAt     time.Time
}

// OutboxChannel is the notification channel that says events committed.
const OutboxChannel = "pix_outbox"

// RelayEvents publishes up to limit unpublished events, in one transaction:
// it locks (FOR UPDATE SKIP LOCKED) the earliest unpublished event of each
// aggregate, in commit order, hands them to publish, marks published the
// ones publish confirms (ok[i]), records the error on the others, and
// commits. Only an aggregate's earliest unpublished event is ever taken, and
// it stays locked until it is marked, so several relays never publish two
// events of one aggregate out of order, nor one event twice in the normal
// case. If the relay dies between publishing and committing, the events
// are published again by the next round: the broker drops the copy by the
// event id.
func (s *Store) RelayEvents(ctx context.Context, limit int, publish func(context.Context, []Event) (ok []bool, err error)) (published int, err error) {
	var pubErr error
	err = inTx(ctx, s.pool, func(tx pgx.Tx) error {
		rows, err := tx.Query(ctx, `
			SELECT id::text, seq, aggregate_type, aggregate_id, event_type, payload, created_at
			FROM outbox_events e
			WHERE published_at IS NULL
			  AND NOT EXISTS (
			      SELECT 1 FROM outbox_events p
			      WHERE p.published_at IS NULL AND p.aggregate_type = e.aggregate_type
			        AND p.aggregate_id = e.aggregate_id AND p.seq < e.seq)
			ORDER BY seq
			LIMIT $1
			FOR UPDATE SKIP LOCKED`, limit)
		if err != nil {
			return fmt.Errorf("claim events: %w", err)
		}
		events, err := pgx.CollectRows(rows, pgx.RowToStructByPos[Event])
		if err != nil || len(events) == 0 {
			return err
		}
		var ok []bool
		ok, pubErr = publish(ctx, events)
		var done, failed []string
		for i, e := range events {
			if i < len(ok) && ok[i] {
				done = append(done, e.ID)
			} else {
				failed = append(failed, e.ID)
			}
		}
		if len(done) > 0 {
			if _, err := tx.Exec(ctx, `UPDATE outbox_events SET published_at = clock_timestamp() WHERE id = ANY($1::uuid[])`, done); err != nil {
				return fmt.Errorf("mark events published: %w", err)
			}
		}
		if len(failed) > 0 {
			reason := "not confirmed by the broker"
			if pubErr != nil {
				reason = pubErr.Error()
			}
			if _, err := tx.Exec(ctx, `UPDATE outbox_events SET attempts = attempts + 1, last_error = $2 WHERE id = ANY($1::uuid[])`, failed, reason); err != nil {
				return fmt.Errorf("record publish failure: %w", err)
			}
		}
		published = len(done)
		// Commit the marks and the failure records; the failure is
		// reported after.
		return nil
	})
	if err != nil {
		return 0, err
	}
	if pubErr != nil {
		return published, fmt.Errorf("publish: %w", pubErr)
	}
	return published, nil
}

// OutboxLag is how far the relay is behind.
type OutboxLag struct {
	Unpublished int64   `json:"unpublished"`
	OldestAge   float64 `json:"oldest_age_seconds"`
}

// OutboxLag reports the unpublished events and the age of the oldest.
func (s *Store) OutboxLag(ctx context.Context) (OutboxLag, error) {
	var l OutboxLag
	err := s.pool.QueryRow(ctx, `
		SELECT count(*), COALESCE(EXTRACT(EPOCH FROM clock_timestamp() - min(created_at)), 0)::float8
		FROM outbox_events WHERE published_at IS NULL`).Scan(&l.Unpublished, &l.OldestAge)
	if err != nil {
		return OutboxLag{}, classify(fmt.Errorf("outbox lag: %w", err))
	}
	return l, nil
}

// DeletePublishedEvents deletes up to limit events published before
// olderThan ago and returns how many.
func (s *Store) DeletePublishedEvents(ctx context.Context, olderThan time.Duration, limit int) (int64, error) {
	tag, err := s.pool.Exec(ctx, `
		DELETE FROM outbox_events WHERE id IN (
			SELECT id FROM outbox_events WHERE published_at < now() - $1::interval
			ORDER BY published_at LIMIT $2 FOR UPDATE SKIP LOCKED)`, olderThan, limit)
	if err != nil {
		return 0, classify(fmt.Errorf("delete published events: %w", err))
	}
	return tag.RowsAffected(), nil
}
