package dictspec

import (
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"
)

const signature = `<ds:Signature xmlns:ds="http://www.w3.org/2000/09/xmldsig#"><ds:SignedInfo/></ds:Signature>`

func closeBody(inner string) string {
	return `<?xml version="1.0" encoding="UTF-8"?><CloseInfractionReportRequest>` + inner + `</CloseInfractionReportRequest>`
}

// TestCheckRequest: the checker accepts a request as the specification
// writes it, and refuses each kind of drift it is there to catch.
func TestCheckRequest(t *testing.T) {
	spec, err := Load()
	if err != nil {
		t.Fatal(err)
	}
	const id = "91d65e98-97c0-4b0f-b577-73625da1f9fc"
	good := signature + `<InfractionReportId>` + id + `</InfractionReportId><Participant>12345678</Participant><AnalysisResult>AGREED</AnalysisResult><AnalysisDetails>ok</AnalysisDetails>`
	for _, tc := range []struct {
		name, method, target, body, contentType, header string
		ok                                              bool
	}{
		{"close as written", "POST", "/infraction-reports/" + id + "/close", closeBody(good), "application/xml", "", true},
		{"unsigned", "POST", "/infraction-reports/" + id + "/close", closeBody(strings.Replace(good, signature, "", 1)), "application/xml", "", false},
		{"unknown element", "POST", "/infraction-reports/" + id + "/close", closeBody(good + `<Reason>x</Reason>`), "application/xml", "", false},
		{"unknown result", "POST", "/infraction-reports/" + id + "/close", closeBody(strings.Replace(good, "AGREED", "AGREE", 1)), "application/xml", "", false},
		{"json", "POST", "/infraction-reports/" + id + "/close", closeBody(good), "application/json", "", false},
		{"root misnamed", "POST", "/infraction-reports/" + id + "/close", strings.ReplaceAll(closeBody(good), "CloseInfractionReportRequest", "CloseRequest"), "application/xml", "", false},
		{"id not a uuid", "POST", "/infraction-reports/x/close", closeBody(good), "application/xml", "", false},
		{"no such path", "POST", "/infraction-reports/" + id + "/agree", closeBody(good), "application/xml", "", false},
		{"list as written", "GET", "/infraction-reports/?Participant=12345678&IsCredited=true&Status=OPEN&Status=ACKNOWLEDGED&ModifiedAfter=2026-12-01T10:00:00.000Z&Limit=200", "", "", "", true},
		{"list without participant", "GET", "/infraction-reports/?IsCredited=true", "", "", "", false},
		{"list offset", "GET", "/infraction-reports/?Participant=12345678&Offset=20", "", "", "", false},
		{"list limit", "GET", "/infraction-reports/?Participant=12345678&Limit=201", "", "", "", false},
		{"list status", "GET", "/infraction-reports/?Participant=12345678&Status=DONE", "", "", "", false},
		{"refunds without role", "GET", "/refunds/?Participant=12345678", "", "", "", false},
		{"get as written", "GET", "/refunds/" + id, "", "", "12345678", true},
		{"get without requester", "GET", "/refunds/" + id, "", "", "", false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			r := httptest.NewRequest(tc.method, tc.target, strings.NewReader(tc.body))
			if tc.contentType != "" {
				r.Header.Set("Content-Type", tc.contentType)
			}
			if tc.header != "" {
				r.Header.Set("PI-RequestingParticipant", tc.header)
			}
			err := spec.CheckRequest(r, []byte(tc.body))
			if (err == nil) != tc.ok {
				t.Fatalf("ok %v, got %v", tc.ok, err)
			}
		})
	}
}

// TestCheckResponse: answers are open to new elements, not to wrong ones.
func TestCheckResponse(t *testing.T) {
	spec, err := Load()
	if err != nil {
		t.Fatal(err)
	}
	r := httptest.NewRequest("GET", "/refunds/91d65e98-97c0-4b0f-b577-73625da1f9fc", nil)
	h := http.Header{"Content-Type": {"application/xml"}}
	refund := `<Refund><TransactionId>E9999901012341234123412345678900</TransactionId><RefundReason>FRAUD</RefundReason><RefundAmount>200.00</RefundAmount><Id>91d65e98-97c0-4b0f-b577-73625da1f9fc</Id><Status>%s</Status><ContestedParticipant>99999010</ContestedParticipant><RequestingParticipant>99999011</RequestingParticipant><CreationTime>2020-01-17T10:00:00.000Z</CreationTime><LastModified>2020-01-17T10:00:00.000Z</LastModified>%s</Refund>`
	answer := func(status, extra string, signed bool) []byte {
		sig := ""
		if signed {
			sig = signature
		}
		return []byte(`<GetRefundResponse>` + sig + `<ResponseTime>2020-01-10T10:00:00.000Z</ResponseTime><CorrelationId>a9f13566e19f5ca51329479a5bae60c5</CorrelationId>` +
			strings.Replace(strings.Replace(refund, "%s", status, 1), "%s", extra, 1) + `</GetRefundResponse>`)
	}
	if err := spec.CheckResponse(r, 200, h, answer("OPEN", "<NewElement>x</NewElement>", true)); err != nil {
		t.Errorf("an answer with a new element: %v", err)
	}
	if err := spec.CheckResponse(r, 200, h, answer("OPENED", "", true)); err == nil {
		t.Error("a wrong status accepted")
	}
	if err := spec.CheckResponse(r, 200, h, answer("OPEN", "", false)); err == nil {
		t.Error("an unsigned answer accepted")
	}
	if err := spec.CheckResponse(r, 418, h, answer("OPEN", "", true)); err == nil {
		t.Error("an undocumented status accepted")
	}
	problem := []byte(`<problem xmlns="urn:ietf:rfc:7807"><type>https://dict.pi.rsfn.net.br/api/v1/error/RateLimited</type><title>Rate limited</title><status>429</status></problem>`)
	if err := spec.CheckResponse(r, 429, http.Header{"Content-Type": {"application/problem+xml"}}, problem); err != nil {
		t.Errorf("an unsigned 429: %v", err)
	}
}

// TestParseDateTime: RFC 3339's date-time, neither more (time.Parse's
// comma and 24-hour offsets) nor less (its lower case "t" and "z").
func TestParseDateTime(t *testing.T) {
	for v, want := range map[string]string{
		"2026-12-01T10:00:00Z":              "2026-12-01T10:00:00Z",
		"2026-12-01T10:00:00.123Z":          "2026-12-01T10:00:00.123Z",
		"2026-12-01T07:00:00-03:00":         "2026-12-01T10:00:00Z",
		"2026-12-01t10:00:00z":              "2026-12-01T10:00:00Z",
		"2026-12-01T10:00:00.123456789123Z": "2026-12-01T10:00:00.123456789Z",
		"2026-12-01T10:00:00,5Z":            "",
		"2026-12-01T10:00:00+24:00":         "",
		"2026-12-01T10:00:00+03:60":         "",
		"2026-12-01T10:00:00+0300":          "",
		"2026-12-01T10:00Z":                 "",
		"2026-12-01":                        "",
		"2026-12-01 10:00:00Z":              "",
		"2026-02-30T10:00:00Z":              "",
		"2026-12-01T24:00:00Z":              "",
		"2026-12-31T23:59:60Z":              "", // a leap second: see doc.go
		"2026-12-01T10:00:00Z\n":            "",
		" 2026-12-01T10:00:00Z":             "",
	} {
		got, err := ParseDateTime(v)
		switch {
		case want == "" && err == nil:
			t.Errorf("%q: taken as %v", v, got)
		case want != "" && (err != nil || got.UTC().Format(time.RFC3339Nano) != want):
			t.Errorf("%q: %v, %v; want %s", v, got, err, want)
		}
	}
}
