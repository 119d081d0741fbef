package db

import (
	"context"
	"slices"
	"sync"

	"github.com/jackc/pgx/v5"
)

// The wake-ups of the holds an inflow filled (issue 37). A hold that fills
// (NewHold.FillFromCredits: a MED's) is filled in the inflow's own
// transaction (FillHolds); its holder, a saga waiting for the money, learns
// of it after that transaction committed: the inflow's caller collects the
// holds its transaction filled (CollectFills, which FillHolds notes them
// in) and, once committed, hands them to the hooks the sagas declared
// (Store.HoldsFilled, Store.OnHoldsFilled). A wake-up is never part of the
// inflow: it is sent after the commit, its failure is the hook's to log,
// and one lost (the process gone between the commit and the hook) only
// delays the holder to its own next look, the money held meanwhile.

// FilledHold is a hold an inflow filled, as the hooks are told of it.
type FilledHold struct {
	ID, Ref, Kind string
	AccountID     string
	// FilledCents is what the inflow (Source) added to it.
	FilledCents int64
	Source      FillSource
}

// Fills are the holds the fills of one transaction filled (CollectFills).
type Fills struct {
	mu    sync.Mutex
	holds []FilledHold
}

// fillsTx is a transaction whose fills are noted (CollectFills).
type fillsTx struct {
	pgx.Tx
	fills *Fills
}

// CollectFills returns tx noting, in the Fills returned, the holds
// FillHolds fills in it, whoever calls it there (a credit, a refund, a
// Release or a Shrink): the caller hands them to Store.HoldsFilled after
// the transaction committed. Call it in each attempt of the transaction
// (InTx's fn): what an attempt rolled back noted goes with it.
func CollectFills(tx pgx.Tx) (pgx.Tx, *Fills) {
	f := &Fills{}
	return fillsTx{Tx: tx, fills: f}, f
}

// fillsIn is tx's Fills, nil when nobody collects them (a nil Fills notes
// nothing).
func fillsIn(tx pgx.Tx) *Fills {
	if c, ok := tx.(fillsTx); ok {
		return c.fills
	}
	return nil
}

func (f *Fills) add(holds []FilledHold) {
	if f == nil || len(holds) == 0 {
		return
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	f.holds = append(f.holds, holds...)
}

// fillsHooks are a store's FillsHooks.
type fillsHooks struct {
	mu    sync.Mutex
	hooks []FillsHook
}

// Holds are the holds filled, in the order they were.
func (f *Fills) Holds() []FilledHold {
	if f == nil {
		return nil
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	return slices.Clone(f.holds)
}

// FillsHook is told of the holds a committed transaction filled. It must
// not fail the inflow (it returns nothing: its failures are its to log)
// and should be brief: the inflow's caller waits for it.
type FillsHook func(ctx context.Context, filled []FilledHold)

// OnHoldsFilled adds hook to those HoldsFilled calls (the sagas' hooks,
// saga.Descriptor.HoldsFilled, set once at the process's start, before the
// store is used).
func (s *Store) OnHoldsFilled(hook FillsHook) {
	s.fillsHooks.mu.Lock()
	defer s.fillsHooks.mu.Unlock()
	s.fillsHooks.hooks = append(s.fillsHooks.hooks, hook)
}

// HoldsFilled hands the holds f noted to every hook, after the transaction
// that filled them committed (never before: a holder woken early reads the
// hold unfilled and sleeps on). Nothing filled: no call.
func (s *Store) HoldsFilled(ctx context.Context, f *Fills) {
	filled := f.Holds()
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
