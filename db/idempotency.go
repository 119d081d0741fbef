package db

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5"

	"github.com/pixbank/pix/internal/pix"
)

// idempotencySQL holds the statements of queries/idempotency.sql.
var idempotencySQL struct{ Reserve, ReadKey, RecordResponse, Release string }

func init() { bindQueries("idempotency.sql", &idempotencySQL) }

// Reservation is a request's hold on an Idempotency-Key: only its holder
// may record the key's response (Token fences a holder whose reservation
// was taken over).
type Reservation struct {
	// Caller owns the key (the bearer token's sub): keys are per caller.
	Caller string
	Key    uuid.UUID
	Token  uuid.UUID
}

// RecordedResponse is the answer recorded on a key, replayed to every later
// request with the same key and body.
type RecordedResponse struct {
	StatusCode int
	Body       []byte
}

// KeyPolicy says how long a reservation holds (a holder that died is taken
// over after it) and how long a key is kept.
type KeyPolicy struct {
	LockFor time.Duration
	KeepFor time.Duration
}

// ReserveKey reserves caller's Idempotency-Key for a request whose body
// hashes to requestHash; another caller's use of the same key is another
// key. It returns the reservation, or the response recorded on the
// key (replay it), or pix.ErrIdempotencyKeyReused (another body) or a
// *KeyInProgressError (another request holds it). An expired key counts as
// new; a reservation past its lock whose holder recorded nothing (it died)
// is taken over.
func (s *Store) ReserveKey(ctx context.Context, caller string, key uuid.UUID, requestHash string, p KeyPolicy) (*Reservation, *RecordedResponse, error) {
	res := &Reservation{Caller: caller, Key: key, Token: uuid.New()}
	for {
		var reserved bool
		err := s.pool.QueryRow(ctx, idempotencySQL.Reserve, key, requestHash, res.Token, p.LockFor, p.KeepFor, caller).Scan(&reserved)
		if err == nil {
			return res, nil, nil
		}
		if !errors.Is(err, pgx.ErrNoRows) {
			return nil, nil, Classify(fmt.Errorf("reserve idempotency key: %w", err))
		}
		// The key is taken: say by what.
		var hash string
		var status *int
		var body []byte
		var lockLeft float64 // seconds
		err = s.pool.QueryRow(ctx, idempotencySQL.ReadKey, key, caller).Scan(&hash, &status, &body, &lockLeft)
		if errors.Is(err, pgx.ErrNoRows) {
			continue // deleted in between (expired and cleaned): try again
		}
		if err != nil {
			return nil, nil, Classify(fmt.Errorf("read idempotency key: %w", err))
		}
		switch {
		case hash != requestHash:
			return nil, nil, pix.ErrIdempotencyKeyReused
		case status != nil:
			return nil, &RecordedResponse{StatusCode: *status, Body: body}, nil
		default:
			return nil, nil, &KeyInProgressError{RetryAfter: time.Duration(lockLeft * float64(time.Second))}
		}
	}
}

// KeyInProgressError is pix.ErrRequestInProgress with the time left on the
// holder's reservation.
type KeyInProgressError struct {
	RetryAfter time.Duration
}

func (e *KeyInProgressError) Error() string { return pix.ErrRequestInProgress.Error() }

func (e *KeyInProgressError) Unwrap() error { return pix.ErrRequestInProgress }

// errReservationLost: the reservation was taken over before its response
// was recorded (the holder outlived its lock); its work must not commit.
var errReservationLost = fmt.Errorf("%w: the reservation expired and was taken over", pix.ErrRequestInProgress)

// recordResponse records the key's response, fenced by the reservation's
// token, within tx.
func recordResponse(ctx context.Context, tx pgx.Tx, r Reservation, status int, body []byte) error {
	tag, err := tx.Exec(ctx, idempotencySQL.RecordResponse, r.Key, r.Token, status, body, r.Caller)
	if err != nil {
		return fmt.Errorf("record idempotent response: %w", err)
	}
	if tag.RowsAffected() == 0 {
		return errReservationLost
	}
	return nil
}

// RecordCreated records, within tx, what a request created as the answer
// of its Idempotency-Key: 201 with the body render makes of created, which
// every later request with the key and the same body is answered with.
// Called in the transaction that created the resource (InTx), so the
// resource and its key's answer commit together or not at all. The record
// is fenced by r's token: a reservation taken over meanwhile (its holder
// outlived KeyPolicy.LockFor) is pix.ErrRequestInProgress, and the
// transaction must not commit. render must be pure: InTx may run the
// transaction again.
func RecordCreated[T any](ctx context.Context, tx pgx.Tx, r Reservation, created T, render func(T) ([]byte, error)) error {
	body, err := render(created)
	if err != nil {
		return fmt.Errorf("render response: %w", err)
	}
	return recordResponse(ctx, tx, r, 201, body)
}

// RecordResponse records a response that moved no money (a refusal) on the
// key.
func (s *Store) RecordResponse(ctx context.Context, r Reservation, status int, body []byte) error {
	return InTx(ctx, s.pool, func(tx pgx.Tx) error { return recordResponse(ctx, tx, r, status, body) })
}

// ReleaseKey gives a reservation up without a response (a technical
// failure committed nothing): the next request with the key runs afresh.
func (s *Store) ReleaseKey(ctx context.Context, r Reservation) error {
	_, err := s.pool.Exec(ctx, idempotencySQL.Release, r.Key, r.Token, r.Caller)
	if err != nil {
		return Classify(fmt.Errorf("release idempotency key: %w", err))
	}
	return nil
}
