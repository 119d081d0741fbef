// Package med owns MED, the special return mechanism, as the credited
// participant (Resolução BCB 103/2021, MED 2.0; docs/med.md "The saga"):
// a saga per infraction report of the DICT about a PIX we credited,
// pix-med:<report id>. Intake is the one door a report comes in by (the
// DICT's lister and the PSP's webhook both hand it there, through Doors,
// which signals the report's open run after each change), IntakeRefund
// the door of the payer's participant's refund request. The saga holds
// the PIX's amount at once (the core's holds, kind med, I11, a hold that
// fills from the account's later inflows),
// acknowledges the report at the DICT, waits for an operator's analysis,
// closes the report at the DICT, then releases the hold (DISAGREED, no
// refund request within 72 hours, cancelled by the reporter) or returns
// the held money through the devolução saga (db.RecordRefund capturing
// what the hold holds), in parts as the account's inflows fill the next
// hold (each fill waking the run after the inflow's commit, FillsWake; the
// run's hourly look the backstop), until the amount or 90 days after the
// PIX, and closes the refund request at the DICT with the devolução's
// rtrId.
//
// Its tables (pix_med_reports, db/migrations 0034, 0038, 0040) hold the
// report as the DICT sent it and OUR saga's state of it, and
// (pix_med_refund_requests) the refund requests no report answers, each
// by its own id, for on-call (one kept as its report ended DISAGREED or
// cancelled is closed REJECTED at the DICT by the report's run as it ends:
// keptclose.go); every change is decided under
// the report's row lock on the generation the run read (Report.Gen, the
// fence): a late activity, a retry after a lost answer, an intake at the
// same time change nothing but what the first decided. The DICT is reached
// through the small interface the saga owns (DICT), which
// internal/dict.HTTPClient satisfies; a write marked sent (a lost answer,
// whatever the attempt or the run) is read back before it is sent again,
// a refusal or an answer not verified stops the run visibly
// (Report.DICTProblem), never guessed past.
package med
