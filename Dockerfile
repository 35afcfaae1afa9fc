# rmqtorture itself as an image: the static binary (CGO_ENABLED=0) on an
# empty image. It drives the host's Docker Engine through the socket you
# mount, and reaches the brokers it starts on the host's 127.0.0.1, so it
# runs on the host's network (docs/install.md, "In a container"):
#
#   CGO_ENABLED=0 go build -trimpath -o rmqtorture . && docker build -t rmqtorture .
#   docker run --rm --network host -v /var/run/docker.sock:/var/run/docker.sock \
#     -v "$PWD/runs:/work" rmqtorture run kill-mid-burst
#
# No base image: nothing to pull, nothing but the binary to patch.
FROM scratch
COPY rmqtorture /usr/local/bin/rmqtorture
# Run folders go to /work (mount a host folder there to keep them).
WORKDIR /work
ENTRYPOINT ["/usr/local/bin/rmqtorture"]
