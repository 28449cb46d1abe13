# syntax=docker/dockerfile:1
# jetgate's image for those who build with Docker; scripts/image builds the
# same image with Go alone (deploy/README.md). Multi-platform:
#   docker buildx build --platform linux/amd64,linux/arm64 -t jetgate:dev .

FROM --platform=$BUILDPLATFORM golang:1.26.8 AS build
ARG TARGETOS=linux
ARG TARGETARCH
ARG VERSION=""
WORKDIR /src
COPY go.mod go.sum ./
RUN go mod download
COPY . .
RUN CGO_ENABLED=0 GOOS=$TARGETOS GOARCH=$TARGETARCH \
    go build -trimpath -ldflags="-s -w -buildid= ${VERSION:+-X github.com/jetgate/jetgate/app.version=${VERSION}}" -o /out/usr/local/bin/jetgate ./cmd/jetgate
# The root filesystem besides the binary: the user, /tmp, the working
# directory (the embedded server's default data_dir lives there).
RUN mkdir -p /out/etc /out/tmp /out/var/lib/jetgate \
 && printf 'root:x:0:0:root:/root:/sbin/nologin\nnonroot:x:65532:65532:nonroot:/var/lib/jetgate:/sbin/nologin\n' > /out/etc/passwd \
 && printf 'root:x:0:\nnonroot:x:65532:\n' > /out/etc/group \
 && chmod 1777 /out/tmp && chmod 700 /out/var/lib/jetgate && chown 65532:65532 /out/var/lib/jetgate

FROM scratch
COPY --from=build /out/ /
ARG VERSION=dev
ARG REVISION=unknown
ARG CREATED=1970-01-01T00:00:00Z
LABEL org.opencontainers.image.title="jetgate" \
      org.opencontainers.image.description="gRPC and REST gateway for NATS JetStream durable pull consumers" \
      org.opencontainers.image.version="$VERSION" \
      org.opencontainers.image.revision="$REVISION" \
      org.opencontainers.image.created="$CREATED" \
      org.opencontainers.image.source="https://github.com/jetgate/jetgate"
ENV PATH=/usr/local/bin JETGATE_GRPC_ADDR=:9090 JETGATE_HTTP_ADDR=:8080
USER 65532:65532
WORKDIR /var/lib/jetgate
EXPOSE 9090 8080
STOPSIGNAL SIGTERM
ENTRYPOINT ["/usr/local/bin/jetgate"]
