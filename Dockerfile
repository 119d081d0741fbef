# The images of the PIX service:
#   docker build .                  the production image (target pixd): pixd
#                                   and pixctl, as user nonroot, nothing else
#   docker build --target pspsim .  the PSP simulator, for docker-compose and
#                                   tests only; never in the production image
# Both are distroless (no shell, no package manager); their healthchecks run
# the binaries' own `healthcheck URL`. The build copies only what it compiles
# (go.mod, go.sum, the module's package directories; .dockerignore keeps
# tests, docs and tools out), and `make test` checks that this is enough
# (tools/deploycheck: every file `go list -deps` names is copied in).
# Base images are pinned: the Go toolchain by its exact tag, distroless by
# digest (gcr.io/distroless/static-debian12:nonroot; refresh with
# `crane digest gcr.io/distroless/static-debian12:nonroot`).
#
# The build's identity (docs/cli.md, "Build identity"): the build context has
# no .git, so the release pipeline names the build with build arguments,
#   docker build --build-arg VERSION=v1.4.0 \
#     --build-arg REVISION=$(git rev-parse HEAD) \
#     --build-arg CREATED=$(date -u +%Y-%m-%dT%H:%M:%SZ) .
# which the binaries get at link time (pixd version, pix_build_info, the
# traces' service.version, the worker's build id) and the images carry as
# their OCI labels. Unset, a binary says "devel" and "unknown".
ARG VERSION=""
ARG REVISION=""
ARG CREATED=""
ARG SOURCE=https://github.com/pixbank/pix

FROM golang:1.26.8-bookworm AS build
WORKDIR /src
# -tags: scripts/lib.sh's GO_TAGS (gin without MessagePack).
ENV CGO_ENABLED=0 GOFLAGS="-trimpath -tags=nomsgpack"
COPY go.mod go.sum ./
RUN go mod download
COPY activities ./activities
COPY api ./api
COPY cmd ./cmd
COPY db ./db
COPY internal ./internal
COPY saga ./saga
COPY worker ./worker
COPY workflows ./workflows
# Declared this late, a new version rebuilds from here, not the downloads.
ARG VERSION
ARG REVISION
ENV BUILDINFO_LDFLAGS="-X github.com/pixbank/pix/internal/buildinfo.Override=${VERSION} -X github.com/pixbank/pix/internal/buildinfo.Revision=${REVISION}"
RUN go build -ldflags "$BUILDINFO_LDFLAGS" -o /out/pixd ./cmd/pixd && \
    go build -ldflags "$BUILDINFO_LDFLAGS" -o /out/pixctl ./cmd/pixctl

# Compiled only for its own target: building the production image skips it.
FROM build AS build-pspsim
RUN go build -ldflags "$BUILDINFO_LDFLAGS" -o /out/pspsim ./cmd/pspsim

FROM gcr.io/distroless/static-debian12:nonroot@sha256:afa5c872c891853ca7fcf1f12c3edb23f7eeef36189728842dd51042ff57f7ab AS pspsim
ARG VERSION
ARG REVISION
ARG CREATED
ARG SOURCE
LABEL org.opencontainers.image.title="pspsim" \
      org.opencontainers.image.description="The PIX service's PSP simulator: development and tests only" \
      org.opencontainers.image.version="${VERSION}" \
      org.opencontainers.image.revision="${REVISION}" \
      org.opencontainers.image.created="${CREATED}" \
      org.opencontainers.image.source="${SOURCE}"
COPY --from=build-pspsim /out/pspsim /usr/local/bin/pspsim
USER nonroot
EXPOSE 8090
ENTRYPOINT ["/usr/local/bin/pspsim"]

# The production image: the default target, last.
FROM gcr.io/distroless/static-debian12:nonroot@sha256:afa5c872c891853ca7fcf1f12c3edb23f7eeef36189728842dd51042ff57f7ab AS pixd
ARG VERSION
ARG REVISION
ARG CREATED
ARG SOURCE
LABEL org.opencontainers.image.title="pixd" \
      org.opencontainers.image.description="The PIX credit service: pixd (api, worker, migrate) and pixctl" \
      org.opencontainers.image.version="${VERSION}" \
      org.opencontainers.image.revision="${REVISION}" \
      org.opencontainers.image.created="${CREATED}" \
      org.opencontainers.image.source="${SOURCE}"
COPY --from=build /out/pixd /out/pixctl /usr/local/bin/
USER nonroot
EXPOSE 8080
ENTRYPOINT ["/usr/local/bin/pixd"]
CMD ["api"]
