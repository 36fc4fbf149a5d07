// Command followfeed-lab measures and stresses followfeed: `bench` builds
// scale S and writes BENCHMARKS.md, `soak` runs the reliability scenarios
// against the product binary and writes RELIABILITY.md, `rank-eval`
// measures the ranking on real arXiv listings and writes its section of
// BENCHMARKS.md. It is not part of the product: the followfeed binary does
// not contain it.
package main

import (
	"context"
	"os"
	"os/signal"
	"syscall"
)

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	err := run(ctx, os.Args[1:], os.Getenv, os.Stdout)
	stop()
	os.Exit(exitCode(err, os.Stderr))
}
