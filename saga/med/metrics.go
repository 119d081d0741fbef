package med

import "github.com/prometheus/client_golang/prometheus"

// intakeTotal counts the reports received for the first time in this
// process, by the status they were recorded in: received (a PIX we
// credited), not_ours (a PIX we did not: nothing held), ended (cancelled
// before we saw it).
var intakeTotal = prometheus.NewCounterVec(prometheus.CounterOpts{
	Name: "pix_med_reports_received_total",
	Help: "MED infraction reports received for the first time, by the status recorded (received, not_ours, ended).",
}, []string{"status"})

