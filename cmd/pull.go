package cmd

import (
	"context"
	"fmt"
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
//
// One of the project's own images (rmqtorture/rabbitmq:4.0-trixie, the
// default) that the engine lacks gives way to the official image of its
// RabbitMQ version from --official-registry (docker.OfficialFor): a laptop
// or CI runner without root, debootstrap or Debian's mirror runs at once;
// the result names the image that ran.
func (o *runOpts) ensureImage(ctx context.Context, log *slog.Logger, cli *docker.Engine, s *scenario.Scenario) error {
	own := ""
	if official := docker.OfficialFor(s.Broker.Image, o.officialRegistry); official != "" {
		missing, err := docker.ImageMissing(ctx, cli, s.Broker.Image)
		if err != nil {
			return err
		}
		if missing {
			log.Warn("the project's broker image is not in the Docker Engine (scripts/build-broker-image.sh builds it from Debian's packages, no registry needed); using the official image of its RabbitMQ version",
				"image", s.Broker.Image, "official", official)
			own, s.Broker.Image = s.Broker.Image, official
		}
	}
	start := time.Now()
	pulled, err := docker.EnsureImage(ctx, cli, log, s.Broker.Image, o.prog.pulling)
	if pulled {
		o.prog.pulled(s.Broker.Image, time.Since(start))
	}
	if err != nil && own != "" {
		return fmt.Errorf("%s is not in the Docker Engine, and its official stand-in could not be had: %w; build %s with scripts/build-broker-image.sh (Debian's packages, no registry), or name a registry that has %s with --official-registry", own, err, own, s.Broker.Image)
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
