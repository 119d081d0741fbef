# The Go binaries of the PIX service: pixd (api | worker | migrate | dev),
# pixctl and the PSP simulator pspsim.
FROM golang:1.26-bookworm AS build
WORKDIR /src
COPY go.mod go.sum ./
RUN go mod download
COPY . .
RUN CGO_ENABLED=0 go build -trimpath -o /out/pixd ./cmd/pixd && \
    CGO_ENABLED=0 go build -trimpath -o /out/pixctl ./cmd/pixctl && \
    CGO_ENABLED=0 go build -trimpath -o /out/pspsim ./cmd/pspsim

FROM gcr.io/distroless/static-debian12:nonroot
COPY --from=build /out/pixd /out/pixctl /out/pspsim /usr/local/bin/
USER nonroot
ENTRYPOINT ["/usr/local/bin/pixd"]
CMD ["api"]
