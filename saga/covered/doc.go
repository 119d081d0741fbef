// Package covered owns the covered windows of the scheduled listers of
// another party's record (the PSP's GET /pix, saga/catchup; the DICT's
// infraction reports and refund requests, saga/med's lister): how far each has taken in what the other
// side recorded, a row per lister in covered_windows (db/migrations 0042),
// by the lister's name. It is the one mechanism of a lister's window: the
// window a run lists (Begin: from the covered end less an overlap, or a
// lookback before any, up to the database's clock less a grace), and the
// covered end's advance (Store.Advance), which moves only forwards, only
// from the value the run started from, and never past the database's
// clock (I7: a stale actor changes nothing); a part that starts after the
// covered end never covers the gap (CheckPart).
package covered
