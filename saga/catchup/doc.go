// Package catchup owns the PSP catch-up: the PIX the PSP's own record
// holds (the API Pix's GET /pix) that no webhook brought, listed window by
// window into the inbox through the inbox's listing path
// (db.Store.StoreListed), so that they are credited all the same, once.
// It is one saga in one package, listed by one line in saga/registry: its
// descriptor (Saga), its store, its workflow and activities, its Temporal
// Schedule, its metrics and its settings (PSP_CATCHUP_*). Its covered
// window is saga/covered's, the one mechanism of a scheduled lister's
// window (covered_windows, name psp-catchup: db/migrations 0042, its end
// brought there from 0015's psp_catchup by 0045); an operator lists a
// window of their own with pixctl psp catchup (StartWindow).
//
// A run lists its window part by part, each as large as one listing
// takes, and records each part's end as covered once every page of it was
// stored, only from the covered end it began from (I7): a run that fails
// half-way keeps what it covered, and the next lists on from there.
package catchup
