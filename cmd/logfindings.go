package cmd

import (
	"context"
	"log/slog"
	"time"

	"github.com/rmqtorture/rmqtorture/scenario"
)

// logScanner reads the broker's log (docker.Container.ScanLog).
type logScanner interface {
	ScanLog(ctx context.Context, since time.Time) ([]scenario.BrokerLogFinding, error)
}

// scanBrokerLog puts the known loss signatures of the broker's log over the
// run into res, next to the numbers they may explain. It ignores Ctrl-C (an
// interrupted run still reports what the broker logged) and is bounded; a
// log that cannot be read is a warning, never a verdict.
func scanBrokerLog(ctx context.Context, log *slog.Logger, b logScanner, res *scenario.Result) {
	sctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 30*time.Second)
	defer cancel()
	// A second of margin: Docker's log timestamps and the run's clock are
	// read apart.
	found, err := b.ScanLog(sctx, res.StartedAt.Add(-time.Second))
	res.BrokerLogFindings = found
	if err != nil {
		log.Warn("broker log not scanned", "err", err)
		res.Warnings = append(res.Warnings, "the broker log was not fully scanned for loss signatures: "+err.Error())
	}
	for _, f := range found {
		log.Info("broker log finding", "signature", f.Signature, "count", f.Count, "first_line", f.FirstLine)
	}
}

// recordFeatures lists the broker's feature flags and deprecated features
// into res (a run of several images compares versions: what each permits
// is read from its broker). It runs after the modes, so its CLI calls cost
// no measurement; a failure is a warning.
func recordFeatures(ctx context.Context, log *slog.Logger, ut *underTest, res *scenario.Result) {
	if ut.features == nil || ctx.Err() != nil {
		return
	}
	fctx, cancel := context.WithTimeout(ctx, time.Minute)
	defer cancel()
	f, err := ut.features(fctx)
	res.BrokerFeatures = f
	if err != nil {
		log.Warn("broker features not listed", "err", err)
		res.Warnings = append(res.Warnings, "the broker's feature flags and deprecated features were not fully listed: "+err.Error())
	}
}
