// Command pixctl is the operator's and demonstrator's tool for the PIX
// service. It talks to the service's HTTP API only.
//
//	pixctl demo    replay the scenario: several PIX, redeliveries, concurrent
//	               copies, a payload mismatch and a PIX to an unknown account;
//	               then print statuses and balances
//
// PIX_API_URL (default http://127.0.0.1:8080) names the API.
package main

import (
	"context"
	"errors"
	"fmt"
	"os"

	"github.com/pixbank/pix/internal/cli"
)

const usage = "usage: pixctl demo"

func main() { cli.Main("pixctl", run) }

func run(ctx context.Context, args []string) error {
	if len(args) != 1 {
		return errors.New(usage)
	}
	apiURL := os.Getenv("PIX_API_URL")
	if apiURL == "" {
		apiURL = "http://127.0.0.1:8080"
	}
	c := &apiClient{base: apiURL}
	switch args[0] {
	case "demo":
		return demo(ctx, c, os.Stdout)
	default:
		return fmt.Errorf("unknown command %q; %s", args[0], usage)
	}
}
