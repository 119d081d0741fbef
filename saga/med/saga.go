package med

import (
	"net/http"

	"github.com/pixbank/pix/internal/pix"
)

// Kinds are the saga's business errors, added to pix.Kinds.
var Kinds = pix.DeclareKinds(
	&pix.Kind{Err: ErrNotFound, Refusal: true,
		Status: http.StatusNotFound, Code: "med_report_not_found", Message: "no infraction report with this id",
		TemporalType: "MEDReportNotFound"},
	&pix.Kind{Err: ErrAnalysed, Refusal: true,
		Status: http.StatusUnprocessableEntity, Code: "med_report_analysed",
		Message: "the infraction report was analysed already, with another result or details"},
	&pix.Kind{Err: ErrNotAnalysable, Refusal: true,
		Status: http.StatusUnprocessableEntity, Code: "med_report_not_analysable",
		Message: "the infraction report is past its analysis (ended, cancelled, not ours, or closed)"},
	&pix.Kind{Err: ErrReportMismatch, Refusal: true,
		Status: http.StatusConflict, Code: "med_report_mismatch",
		Message:      "the infraction report names another PIX than the one received with its id",
		TemporalType: "MEDReportMismatch"},
)
