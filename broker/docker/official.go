package docker

import (
	"context"
	"errors"
	"strings"

	"github.com/distribution/reference"
	"github.com/docker/docker/client"
)

// OfficialFor is the official RabbitMQ image
// (https://hub.docker.com/_/rabbitmq) of the RabbitMQ version one of this
// project's images carries: rmqtorture/rabbitmq:4.0-trixie (RabbitMQ 4.0
// from Debian trixie) → rabbitmq:4.0, taken from registry (a host such as
// 127.0.0.1:5000; "" or docker.io: Docker Hub). "" when img is not one of
// this project's images (rmqtorture/rabbitmq:MAJOR.MINOR-SUITE without a
// registry host). rmqtorture needs nothing changed for the official
// images' layout (docs/images.md).
func OfficialFor(img, registry string) string {
	if !ownHubImage(img) {
		return ""
	}
	named, err := reference.ParseNormalizedNamed(img)
	if err != nil || reference.Path(named) != ownImagePath+"rabbitmq" {
		return ""
	}
	tagged, ok := named.(reference.Tagged)
	if !ok {
		return ""
	}
	version, _, found := strings.Cut(tagged.Tag(), "-")
	if !found || version == "" {
		return ""
	}
	official := "rabbitmq:" + version
	if registry != "" && registry != "docker.io" {
		official = strings.TrimSuffix(registry, "/") + "/" + official
	}
	if _, err := reference.ParseNormalizedNamed(official); err != nil {
		return ""
	}
	return official
}

// ImageMissing reports whether the engine lacks img (an error when the
// engine cannot say).
func ImageMissing(ctx context.Context, cli *client.Client, img string) (bool, error) {
	err := imagePresent(ctx, cli, img)
	if errors.Is(err, ErrImageMissing) {
		return true, nil
	}
	return false, err
}
