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

// endedTotal counts the reports ended in this process, by cause.
var endedTotal = prometheus.NewCounterVec(prometheus.CounterOpts{
	Name: "pix_med_reports_ended_total",
	Help: "MED infraction reports ended, by cause (released, returned, returned_in_part, cancelled).",
}, []string{"cause"})

// dictStoppedTotal counts the DICT steps the saga stopped at: refused by
// the DICT, or answered without a valid signature (Report.DICTProblem).
var dictStoppedTotal = prometheus.NewCounter(prometheus.CounterOpts{
	Name: "pix_med_dict_stopped_total",
	Help: "MED saga steps stopped at the DICT: refused, or the answer's signature not verified.",
})
