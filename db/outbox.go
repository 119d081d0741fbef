package db

import (
	"context"
	"fmt"
	"maps"
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

// CreditEvents are the credit's event types, each with its aggregate type.
var CreditEvents = map[string]string{
	EventCreditSettled: AggregateCredit,
	EventCreditFailed:  AggregateCredit,
}

// TransferEvents are the outgoing transfer's event types, each with its
// aggregate type.
var TransferEvents = map[string]string{
	EventTransferDebited:  AggregateTransfer,
	EventTransferSettled:  AggregateTransfer,
	EventTransferRefunded: AggregateTransfer,
}

// RefundEvents are the refund's event types (db/refunds.go), each with its
// aggregate type.
var RefundEvents = map[string]string{
	EventRefundDebited:  AggregateRefund,
	EventRefundReturned: AggregateRefund,
	EventRefundReversed: AggregateRefund,
}

// CoreEvents are the core pipeline's event types, which the credit's
// descriptor declares: the credit's own and the money API's (HoldEvents:
// every saga's holds).
var CoreEvents = mergeEventTypes(CreditEvents, HoldEvents)

// EventTypes are every event type the outbox holds, each with its
// aggregate type: each saga's (CoreEvents, TransferEvents, RefundEvents).
// One statement writes each (TestEventsAreWrittenAsDeclared), and each has
// its JSON Schema in internal/broker/schemas (docs/events.md). Each saga's
// descriptor names its map, and a -short test in saga/registry fails when
// EventTypes is not exactly the descriptors' maps. A saga of its own
// package adds its map with DeclareEvents.
var EventTypes = mergeEventTypes(CoreEvents, TransferEvents, RefundEvents)

// mergeEventTypes is the union of the sagas' event types.
func mergeEventTypes(sagas ...map[string]string) map[string]string {
	all := map[string]string{}
	for _, events := range sagas {
		maps.Copy(all, events)
	}
	return all
}

// DeclareEvents adds the event types of a saga declared in a package of
// its own (saga/<name>) to EventTypes and returns them: the saga's map (its
// descriptor's Events). It panics on a type declared before: two sagas
// can't write one event type. Call it only while the saga's package
// variables are initialised (a package-level variable).
func DeclareEvents(events map[string]string) map[string]string {
	for typ := range events {
		if _, taken := EventTypes[typ]; taken {
			panic(fmt.Sprintf("db: event type %s declared twice", typ))
		}
	}
	maps.Copy(EventTypes, events)
	return events
}

// EventSchemaVersion is in every payload; a change a consumer must know of
// raises it.
const EventSchemaVersion = 1

// outboxSQL holds the statements of queries/outbox.sql. The events
// themselves are written by the statements that make the changes they
// announce, each written out in its saga's file (see outbox.sql):
// TestEventsAreWrittenAsDeclared checks them against the package's
// Aggregate* and Event* constants.
var outboxSQL struct{ ClaimEvents, MarkPublished, RecordPublishFailure, Lag string }

func init() { bindQueries("outbox.sql", &outboxSQL) }

// Event is an outbox row as the relay publishes it.
type Event struct {
	ID            string
	Seq           int64
	AggregateType string
	AggregateID   string
	Type          string
	Payload       []byte
	CreatedAt     time.Time
	// Traceparent is the trace context of the transaction that wrote the
	// event (nil: none), which its publish continues.
	Traceparent *string
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
	err = InTx(ctx, s.pool, func(tx pgx.Tx) error {
		rows, err := tx.Query(ctx, outboxSQL.ClaimEvents, limit)
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
			if _, err := tx.Exec(ctx, outboxSQL.MarkPublished, done); err != nil {
				return fmt.Errorf("mark events published: %w", err)
			}
		}
		if len(failed) > 0 {
			reason := "not confirmed by the broker"
			if pubErr != nil {
				reason = pubErr.Error()
			}
			if _, err := tx.Exec(ctx, outboxSQL.RecordPublishFailure, failed, reason); err != nil {
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
	err := s.pool.QueryRow(ctx, outboxSQL.Lag).Scan(&l.Unpublished, &l.OldestAge)
	if err != nil {
		return OutboxLag{}, Classify(fmt.Errorf("outbox lag: %w", err))
	}
	return l, nil
}
