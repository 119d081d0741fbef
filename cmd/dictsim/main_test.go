package main

import (
	"bytes"
	"context"
	"crypto/tls"
	"encoding/json"
	"log/slog"
	"net"
	"net/http"
	"path/filepath"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/pixbank/pix/internal/dict"
	"github.com/pixbank/pix/internal/tooling/devpki"
)

// The binary serves the simulator over mutual TLS with make run's
// development PKI (pixctl dev-pki): the bank's client (dict.New with
// pixd's MED_DICT_* as make run sets them) reads a report the control
// routes opened, its answers' signatures verified, and acknowledges it,
// its request signed and verified; a client without a certificate the
// participants' CA issued is refused in the handshake.
func TestTheBinaryServesTheDICTWithTheDevelopmentPKI(t *testing.T) {
	dir := t.TempDir()
	require.NoError(t, devpki.EnsureDir(dir))
	pki := func(name string) string { return filepath.Join(dir, name) }
	env := map[string]string{
		"DICT_SIM_TLS_CERT_FILE": pki(devpki.DICTServerCertFile), "DICT_SIM_TLS_KEY_FILE": pki(devpki.DICTServerKeyFile),
		"DICT_SIM_TLS_CLIENT_CA_FILE": pki(devpki.CAFile),
		"DICT_SIM_SIGNING_CERT_FILE":  pki(devpki.DICTSignerCertFile), "DICT_SIM_SIGNING_KEY_FILE": pki(devpki.DICTSignerKeyFile),
		"DICT_SIM_PARTICIPANTS": "12345678=" + pki(devpki.BankClientCertFile) + ";99999010=" + pki(devpki.DICTPayerCertFile),
	}
	sim, tlsConfig, err := served(func(k string) string { return env[k] }, slog.New(slog.DiscardHandler))
	require.NoError(t, err)
	ctx, cancel := context.WithCancel(t.Context())
	api, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	control, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	done := make(chan error, 2)
	go func() {
		done <- serve(ctx, slog.New(slog.DiscardHandler), tls.NewListener(api, tlsConfig), sim.Handler())
	}()
	go func() { done <- serve(ctx, slog.New(slog.DiscardHandler), control, sim.ControlHandler()) }()
	t.Cleanup(func() {
		cancel()
		require.NoError(t, <-done)
		require.NoError(t, <-done)
	})

	e2e := "E99999010202612061700abcdefghijk"
	body, _ := json.Marshal(map[string]any{"end_to_end_id": e2e, "amount_cents": 10_000, "debited": "99999010", "credited": "12345678"})
	resp, err := http.Post("http://"+control.Addr().String()+"/sim/infraction-reports", "application/json", bytes.NewReader(body))
	require.NoError(t, err)
	var opened struct {
		Report dict.InfractionReport `json:"infraction_report"`
	}
	require.NoError(t, json.NewDecoder(resp.Body).Decode(&opened))
	resp.Body.Close()
	require.Equal(t, http.StatusCreated, resp.StatusCode)

	bank, err := dict.New(dict.Config{
		BaseURL: "https://" + api.Addr().String() + "/api/v1", Participant: "12345678", Timeout: 5 * time.Second,
		CertFile: pki(devpki.BankClientCertFile), KeyFile: pki(devpki.BankClientKeyFile), CAFile: pki(devpki.CAFile),
		DICTCertFile: pki(devpki.DICTSignerCertFile),
	})
	require.NoError(t, err)
	page, err := bank.ListInfractionReports(ctx, dict.ReportQuery{Role: dict.Credited})
	require.NoError(t, err)
	require.Len(t, page.Reports, 1)
	require.Equal(t, e2e, page.Reports[0].TransactionID)
	acked, err := bank.AcknowledgeInfractionReport(ctx, opened.Report.ID)
	require.NoError(t, err, "the bank's signed write is verified")
	require.Equal(t, dict.ReportAcknowledged, acked.Status)

	stranger := &http.Client{Transport: &http.Transport{TLSClientConfig: &tls.Config{InsecureSkipVerify: true}}} //nolint:gosec // the point: no client certificate
	_, err = stranger.Get("https://" + api.Addr().String() + "/api/v1/infraction-reports")
	require.Error(t, err, "no client certificate: refused in the handshake")
}

// A setting missing is an error at start that names it.
func TestTheBinaryNamesAMissingSetting(t *testing.T) {
	_, _, err := served(func(string) string { return "" }, slog.New(slog.DiscardHandler))
	require.ErrorContains(t, err, "DICT_SIM_TLS_CERT_FILE and DICT_SIM_TLS_KEY_FILE: set both")
}
