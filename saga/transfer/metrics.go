package transfer

import (
	"github.com/prometheus/client_golang/prometheus"

	"github.com/pixbank/pix/saga"
	"github.com/pixbank/pix/saga/sagakit"
)

// finishedOf counts the transfers settled or refunded, in env's process.
func finishedOf(env saga.Env) *sagakit.Finished {
	return saga.FinishedOf(env, "pix_transfers_finished_total", "Outgoing PIX settled or refunded.")
}

// collectors are the saga's metrics: the counter, and the age of the
// oldest open transfer read from PostgreSQL at each scrape: how long money
// has been out of a balance and with nobody yet (PixTransferOpenTooLong).
func collectors(env saga.Env) []prometheus.Collector {
	return []prometheus.Collector{finishedOf(env), &sagakit.OldestAge{
		Desc: prometheus.NewDesc("pix_transfer_oldest_open_age_seconds",
			"Age of the oldest outgoing transfer debited and not yet settled nor refunded (0 when none is open).", nil, nil),
		What: "the oldest open transfer", Read: NewStore(env.Store).OldestOpenTransferAge, Log: env.Log}}
}
