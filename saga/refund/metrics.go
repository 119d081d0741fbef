package refund

import (
	"github.com/prometheus/client_golang/prometheus"

	"github.com/pixbank/pix/saga"
	"github.com/pixbank/pix/saga/sagakit"
)

// finishedOf counts the devoluções returned or reversed, in env's process.
func finishedOf(env saga.Env) *sagakit.Finished {
	return saga.FinishedOf(env, "pix_refunds_finished_total",
		"Devoluções of received PIX returned by the PSP or reversed (the PSP did not make them).")
}

// collectors are the saga's metrics: the counter, and the age of the
// oldest open devolução read from PostgreSQL at each scrape: how long
// money has been out of a balance and with nobody yet
// (PixRefundOpenTooLong).
func collectors(env saga.Env) []prometheus.Collector {
	return []prometheus.Collector{finishedOf(env), &sagakit.OldestAge{
		Desc: prometheus.NewDesc("pix_refund_oldest_open_age_seconds",
			"Age of the oldest devolução debited and not yet returned or reversed (0 when none is open).", nil, nil),
		What: "the oldest open refund", Read: NewStore(env.Store).OldestOpenRefundAge, Log: env.Log}}
}
