package scenario

import (
	"fmt"

	"github.com/distribution/reference"
)

// ImageRef checks that img is a Docker image reference as the engine reads
// it (lower-case repository, optional registry host, tag or digest) and
// returns its normalized form, with Docker Hub's registry and the "latest"
// tag made explicit ("rabbitmq:4" → "docker.io/library/rabbitmq:4"), so two
// spellings of one image compare equal. The error says why img is not one,
// as github.com/distribution/reference, the Docker Engine's own parser, has
// it (e.g. "invalid reference format: repository name must be lowercase").
func ImageRef(img string) (string, error) {
	named, err := reference.ParseNormalizedNamed(img)
	if err != nil {
		return "", fmt.Errorf("%q is not an image reference: %v", img, err)
	}
	return reference.TagNameOnly(named).String(), nil
}
