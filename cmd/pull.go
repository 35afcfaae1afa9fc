package cmd

import (
	"context"
	"log/slog"
	"time"

	"github.com/rmqtorture/rmqtorture/broker/docker"
	"github.com/rmqtorture/rmqtorture/scenario"
)

// ensureImage pulls the scenario's broker image when the engine lacks it
// (docker.EnsureImage), before any container of the run is created (a
// cluster's nodes share it, so it is pulled once). On a terminal the pull
// is the progress line ("pulling IMAGE: 45.2 MB of 120.0 MB"), then a
// phase line; elsewhere two log lines say it began and ended. Ctrl-C stops
// the pull: nothing has been created yet.
func (o *runOpts) ensureImage(ctx context.Context, log *slog.Logger, cli *docker.Engine, s *scenario.Scenario) error {
	start := time.Now()
	pulled, err := docker.EnsureImage(ctx, cli, log, s.Broker.Image, o.prog.pulling)
	if pulled {
		o.prog.pulled(s.Broker.Image, time.Since(start))
	}
	return err
}

// pulling shows line (a pull's progress) as the progress line, in place
// of "waiting for the broker".
func (p *progress) pulling(line string) {
	if p == nil {
		return
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	p.waiting = line
}

// pulled prints that the image was pulled and goes back to waiting for
// the broker, timing its start from now (the broker's "ready in" is its
// boot, not the pull).
func (p *progress) pulled(image string, took time.Duration) {
	if p == nil {
		return
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	p.sayNow(phaseLine("broker", "pulled %s in %.1fs", image, took.Seconds()))
	p.waiting, p.waitSince = "waiting for the broker", p.now()
}
