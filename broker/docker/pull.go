package docker

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"strings"
	"time"

	"github.com/distribution/reference"
	"github.com/docker/docker/api/types/image"
	"github.com/docker/docker/client"
	"github.com/docker/docker/pkg/jsonmessage"

	"github.com/rmqtorture/rmqtorture/redact"
)

// ownImagePath is the repository path of the images
// scripts/build-broker-image.sh builds (rmqtorture/rabbitmq:4.0-trixie …).
// They are built locally and published on no public registry, so a
// missing one named without a registry host is never pulled from Docker
// Hub: whatever answered to that name there would not be this project's.
const ownImagePath = "rmqtorture/"

// EnsureImage makes image present in the local Docker Engine before any
// container is created from it: it returns (false, nil) at once when the
// image is there, else pulls it through the engine (ImagePull,
// anonymously, with the engine's registry configuration: a registry on
// 127.0.0.0/8 is reached over plain HTTP) and returns
// (true, nil) once the engine has it. While the pull runs, progress (when
// not nil) receives one line describing it after every message of the
// engine's JSON progress stream: "pulling IMAGE: 45.2 MB of 120.0 MB"
// (decimal megabytes of the layers whose size the registry has announced;
// the engine reports layers it already has as "Already exists", which
// count for nothing). A pull that fails, or an image of this project's own
// (rmqtorture/…) named without a registry host, is an error matching
// ErrImageMissing that keeps Create's message for a missing image and adds
// the registry's answer. A cluster calls it once, before its first node.
func EnsureImage(ctx context.Context, cli *client.Client, log *slog.Logger, img string, progress func(line string)) (pulled bool, err error) {
	err = imagePresent(ctx, cli, img)
	if !errors.Is(err, ErrImageMissing) {
		return false, err
	}
	if ownHubImage(img) {
		return false, fmt.Errorf("%w (rmqtorture publishes no image on Docker Hub, so it does not pull %q from there; to take it from a registry of your own, name the registry: --image REGISTRY/%s)", err, img, img)
	}
	missing := err
	started := time.Now()
	log.Info("pulling broker image", "image", img)
	ps := &pullStatus{image: img, layers: map[string]*layerProgress{}}
	if progress != nil {
		progress(ps.line())
	}
	if err := pull(ctx, cli, img, ps, progress); err != nil {
		if ctx.Err() != nil {
			return false, fmt.Errorf("pulling %q: interrupted (%w)", img, ctx.Err())
		}
		return false, fmt.Errorf("%w (pulling %q failed: %s; rmqtorture pulls anonymously: for a private registry, docker login and docker pull it first)", missing, img, redact.Foreign(err.Error()))
	}
	if err := imagePresent(ctx, cli, img); err != nil {
		return false, fmt.Errorf("%w (the engine reported the pull of %q complete)", err, img)
	}
	// Layers the engine already had count for nothing.
	downloaded, _ := ps.totals()
	log.Info("broker image pulled", "image", img, "downloaded", mb(downloaded), "took", time.Since(started).Round(100*time.Millisecond))
	return true, nil
}

// pull runs ImagePull and follows its JSON progress stream to its end,
// feeding ps and progress. An error message in the stream is the pull's
// error.
func pull(ctx context.Context, cli *client.Client, img string, ps *pullStatus, progress func(string)) error {
	// Anonymous: credentials stored by `docker login` live with the
	// docker CLI, not the engine. A public or local registry needs none;
	// for a private one the error says to pull the image first.
	rc, err := cli.ImagePull(ctx, img, image.PullOptions{})
	if err != nil {
		return err
	}
	defer rc.Close()
	dec := json.NewDecoder(rc)
	for {
		var m jsonmessage.JSONMessage
		if err := dec.Decode(&m); err != nil {
			if errors.Is(err, io.EOF) {
				return nil
			}
			return fmt.Errorf("read the engine's pull progress: %w", err)
		}
		if m.Error != nil {
			return m.Error
		}
		if m.ErrorMessage != "" { //nolint:staticcheck // older engines send only this
			return errors.New(m.ErrorMessage) //nolint:staticcheck
		}
		if ps.add(m) && progress != nil {
			progress(ps.line())
		}
	}
}

// ownHubImage reports whether img names one of this project's images
// (rmqtorture/…) on Docker Hub, i.e. without a registry host.
func ownHubImage(img string) bool {
	named, err := reference.ParseNormalizedNamed(img)
	if err != nil {
		return false
	}
	return reference.Domain(named) == "docker.io" && strings.HasPrefix(reference.Path(named), ownImagePath)
}

// layerProgress is one layer's download as the pull stream reports it, in
// bytes.
type layerProgress struct {
	current, total       int64
	extracting, complete bool
}

// pullStatus sums a pull's JSON progress messages over its layers.
type pullStatus struct {
	image  string
	layers map[string]*layerProgress
	order  []string
}

// add takes one message of the stream and reports whether it changed the
// line. Layer messages carry the layer's short id; "Downloading" carries
// the bytes so far and the layer's size, "Download complete" and "Pull
// complete" mean all of it, "Extracting" that the download is done.
func (ps *pullStatus) add(m jsonmessage.JSONMessage) bool {
	if m.ID == "" {
		return false
	}
	l := ps.layers[m.ID]
	switch m.Status {
	case "Pulling fs layer", "Waiting", "Downloading", "Verifying Checksum", "Download complete", "Extracting", "Pull complete":
		if l == nil {
			l = &layerProgress{}
			ps.layers[m.ID] = l
			ps.order = append(ps.order, m.ID)
		}
	default: // "Already exists", the repository's own "Pulling from …"
		return false
	}
	switch m.Status {
	case "Downloading":
		if m.Progress != nil {
			l.current = m.Progress.Current
			if m.Progress.Total > 0 {
				l.total = m.Progress.Total
			}
		}
	case "Download complete", "Verifying Checksum":
		l.current = l.total
	case "Extracting", "Pull complete":
		if m.Progress != nil && m.Progress.Total > l.total {
			l.total = m.Progress.Total
		}
		l.current, l.extracting, l.complete = l.total, true, m.Status == "Pull complete"
	}
	return true
}

// totals are the bytes downloaded and announced so far over every layer.
func (ps *pullStatus) totals() (done, total int64) {
	for _, id := range ps.order {
		l := ps.layers[id]
		done += l.current
		total += l.total
	}
	return done, total
}

// line is the one progress line: "pulling IMAGE: 45.2 MB of 120.0 MB",
// ", extracting" once every layer is downloaded and one is still being
// unpacked, just "pulling IMAGE" before a layer's size is known.
func (ps *pullStatus) line() string {
	done, total := ps.totals()
	if total == 0 {
		return "pulling " + ps.image
	}
	s := fmt.Sprintf("pulling %s: %s of %s", ps.image, mb(done), mb(total))
	if done == total {
		for _, id := range ps.order {
			if l := ps.layers[id]; l.extracting && !l.complete {
				return s + ", extracting"
			}
		}
	}
	return s
}

// mb formats a byte count in decimal megabytes with one decimal, as the
// Docker CLI counts them ("45.2 MB").
func mb(n int64) string {
	return fmt.Sprintf("%.1f MB", float64(n)/1e6)
}
