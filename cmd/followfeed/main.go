// Command followfeed is the follow-and-notify service for research papers.
// See README.md; everything happens in package app.
package main

import (
	"context"
	"os"
	"os/signal"
	"syscall"

	"followfeed/app"
)

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	err := app.Run(ctx, os.Args[1:], os.Getenv, os.Stdout)
	stop()
	os.Exit(app.ExitCode(err, os.Stderr))
}
