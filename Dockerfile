# The events-apiserver image, for machines with a container engine:
#
#   docker build $(hack/ldflags.sh --env | sed 's/^/--build-arg /') -t events-apiserver:dev .
#
# `make image` builds the same image (same paths, user, entrypoint, labels)
# without one; see hack/build-image.sh.

# Build: a static binary, stamped with its version (hack/ldflags.sh).
FROM golang:1.26 AS build
ARG VERSION=""
ARG COMMIT=""
ARG DATE=""
WORKDIR /src
COPY go.mod go.sum ./
COPY pkg/recorder/go.mod pkg/recorder/go.sum ./pkg/recorder/
RUN go mod download
COPY . .
RUN CGO_ENABLED=0 go build -trimpath -ldflags "$(VERSION="${VERSION}" COMMIT="${COMMIT}" DATE="${DATE}" hack/ldflags.sh)" \
      -o /out/usr/local/bin/events-apiserver ./cmd/events-apiserver \
 && mkdir -p /out/var/lib/events-apiserver

# Run: no shell, no package manager; the non-root user 65532 of the
# distroless image, which also brings CA certificates, passwd and tmp.
FROM gcr.io/distroless/static-debian12:nonroot
ARG VERSION=""
ARG COMMIT=""
ARG DATE=""
LABEL org.opencontainers.image.title="events-apiserver" \
      org.opencontainers.image.description="Kubernetes Events, made useful and safe: an aggregated API server for core/v1 and events.k8s.io Events" \
      org.opencontainers.image.source="https://github.com/kube-events/events-apiserver" \
      org.opencontainers.image.url="https://github.com/kube-events/events-apiserver" \
      org.opencontainers.image.licenses="Apache-2.0" \
      org.opencontainers.image.version="${VERSION}" \
      org.opencontainers.image.revision="${COMMIT}" \
      org.opencontainers.image.created="${DATE}"
COPY --from=build /out/usr/local/bin/events-apiserver /usr/local/bin/events-apiserver
COPY --from=build --chown=65532:65532 --chmod=0700 /out/var/lib/events-apiserver /var/lib/events-apiserver
USER 65532:65532
WORKDIR /var/lib/events-apiserver
VOLUME /var/lib/events-apiserver
EXPOSE 8443
ENTRYPOINT ["/usr/local/bin/events-apiserver"]
