package db

import (
	"context"
	"errors"
	"slices"
	"sync"

	"github.com/jackc/pgx/v5"
)

// The wake-ups of the holds an inflow filled (issue 37). A hold that fills
// (NewHold.FillFromCredits: a MED's) is filled in the inflow's own
// transaction (FillHolds); its holder, a saga waiting for the money, learns
// of it after that transaction committed: the inflow runs in the store's
// transaction (Store.InTx), which notes the holds FillHolds filled in it
// and, once committed, hands them to the hooks the sagas declared
// (Store.OnHoldsFilled). A wake-up is never part of the inflow: it is sent
// after the commit, its failure is the hook's to log, and one lost (the
// process gone between the commit and the hook) only delays the holder to
// its own next look, the money held meanwhile.

// FilledHold is a hold an inflow filled, as the hooks are told of it.
type FilledHold struct {
	ID, Ref, Kind string
	AccountID     string
	// FilledCents is what the inflow (Source) added to it.
	FilledCents int64
	Source      FillSource
}

// afterCommit is what a transaction of Store.InTx noted for after its
// commit: the holds its fills filled, the channels to wake.
type afterCommit struct {
	mu    sync.Mutex
	holds []FilledHold
	wakes []string
}

// storeTx is a transaction of Store.InTx.
type storeTx struct {
	pgx.Tx
	after *afterCommit
}

// errFillsNotNoted refuses a fill in a transaction that is not the
// store's (Store.InTx): its holders would never be woken.
var errFillsNotNoted = errors.New("db: holds filled outside Store.InTx: their wake-ups would be lost")

// InTx runs fn in one transaction, as the package's InTx does (retried
// after a collision, fn run again from the start, errors classified), and
// once it committed wakes the channels fn asked for (WakeOnCommit), then
// hands the holds its fills filled (FillHolds, whoever calls it in fn: a
// credit, a refund or a reversal, a Release, a Shrink) to the hooks
// (OnHoldsFilled); rolled back, it wakes and tells nothing. Each attempt
// notes afresh: what an attempt rolled back noted goes with it.
//
// It is the one transaction holds fill in, so that a path that fills holds
// cannot forget its wake-ups: FillHolds refuses (errFillsNotNoted) a
// transaction it did not begin, which fails that path's first test rather
// than leaving its holders asleep until their next look. The hooks are
// told after the caller's wakes, as they are the slow part (a hook may
// wait for Temporal, sagakit.WakeAllTimeout at most): a relay or a
// dispatcher is not kept waiting for them.
func (s *Store) InTx(ctx context.Context, fn func(tx pgx.Tx) error) error {
	return s.inTx(ctx, txAttempts, fn)
}

// inTx is InTx with attempts tries.
func (s *Store) inTx(ctx context.Context, attempts int, fn func(tx pgx.Tx) error) error {
	var after *afterCommit
	err := inTxAttempts(ctx, s.pool, attempts, func(tx pgx.Tx) error {
		after = &afterCommit{}
		return fn(storeTx{Tx: tx, after: after})
	})
	if err != nil {
		return err
	}
	if len(after.wakes) > 0 {
		s.Wake(after.wakes...)
	}
	s.holdsFilled(ctx, after.holds)
	return nil
}

// WakeOnCommit asks Store.InTx, whose transaction tx is, to wake channels
// (Store.Wake) once tx committed, before the hooks are told of the holds
// tx filled; a rollback wakes nothing. Outside Store.InTx it panics: a
// transaction of another asks the store to wake after its own commit.
func WakeOnCommit(tx pgx.Tx, channels ...string) {
	a := noted(tx)
	if a == nil {
		panic("db: WakeOnCommit outside Store.InTx")
	}
	a.mu.Lock()
	defer a.mu.Unlock()
	a.wakes = append(a.wakes, channels...)
}

// noted is what tx notes for after its commit, nil when tx is not of
// Store.InTx.
func noted(tx pgx.Tx) *afterCommit {
	if c, ok := tx.(storeTx); ok {
		return c.after
	}
	return nil
}

func (a *afterCommit) add(holds []FilledHold) {
	a.mu.Lock()
	defer a.mu.Unlock()
	a.holds = append(a.holds, holds...)
}

// fillsHooks are a store's FillsHooks.
type fillsHooks struct {
	mu    sync.Mutex
	hooks []FillsHook
}

// FillsHook is told of the holds a committed transaction filled. It must
// not fail the inflow (it returns nothing: its failures are its to log)
// and should be brief: the inflow's caller waits for it.
type FillsHook func(ctx context.Context, filled []FilledHold)

// OnHoldsFilled adds hook to those told of the holds a transaction of
// Store.InTx filled (the sagas' hooks, saga.Descriptor.HoldsFilled, set
// once at the process's start, before the store is used).
func (s *Store) OnHoldsFilled(hook FillsHook) {
	s.fillsHooks.mu.Lock()
	defer s.fillsHooks.mu.Unlock()
	s.fillsHooks.hooks = append(s.fillsHooks.hooks, hook)
}

// holdsFilled hands the holds filled, in the order they were, to every
// hook, after the transaction that filled them committed (never before: a
// holder woken early reads the hold unfilled and sleeps on). Nothing
// filled: no call.
func (s *Store) holdsFilled(ctx context.Context, filled []FilledHold) {
	if len(filled) == 0 {
		return
	}
	s.fillsHooks.mu.Lock()
	hooks := slices.Clone(s.fillsHooks.hooks)
	s.fillsHooks.mu.Unlock()
	for _, hook := range hooks {
		hook(ctx, filled)
	}
}
