package api

import (
	"net/http"
	"net/http/httptest"
	"testing"

	"github.com/gin-gonic/gin"
	"github.com/stretchr/testify/require"
)

// The PSPs' webhooks have places of their own: customer requests holding
// every customer place (slow bodies, reads waiting for Temporal) leave the
// webhooks served, and the other way round.
func TestWebhooksHaveTheirOwnInFlightPlaces(t *testing.T) {
	gin.SetMode(gin.TestMode)
	l := NewInFlight(1, nil)
	entered, release := make(chan struct{}), make(chan struct{})
	r := gin.New()
	r.Use(l.limit)
	hold := func(c *gin.Context) { entered <- struct{}{}; <-release; c.Status(http.StatusOK) }
	r.GET("/accounts/:id", hold)
	r.POST("/webhooks/pix", func(c *gin.Context) { c.Status(http.StatusAccepted) })
	r.GET("/transfers/:id", func(c *gin.Context) { c.Status(http.StatusOK) })

	done := make(chan int)
	go func() {
		w := httptest.NewRecorder()
		r.ServeHTTP(w, httptest.NewRequest(http.MethodGet, "/accounts/a", nil))
		done <- w.Code
	}()
	<-entered // the one customer place is held

	serve := func(method, path string) int {
		w := httptest.NewRecorder()
		r.ServeHTTP(w, httptest.NewRequest(method, path, nil))
		return w.Code
	}
	require.Equal(t, http.StatusServiceUnavailable, serve(http.MethodGet, "/transfers/t"), "the customer routes are at their cap")
	require.Equal(t, http.StatusAccepted, serve(http.MethodPost, "/webhooks/pix"), "a webhook is served from its own places")
	close(release)
	require.Equal(t, http.StatusOK, <-done)
}
