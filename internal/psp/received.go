package psp

import (
	"context"
	"encoding/json"
	"time"
)

// ReceivedQuery asks the PSP for one page of the PIX it received (GET
// /pix?inicio=&fim=&paginacao.paginaAtual=&paginacao.itensPorPagina=):
// those created from Start to End, both included (the spec's inicio and
// fim).
type ReceivedQuery struct {
	Start, End time.Time
	// Page is paginacao.paginaAtual, from 0.
	Page int
	// PerPage is paginacao.itensPorPagina, 1 to MaxReceivedPerPage.
	PerPage int
}

// MaxReceivedPerPage is the spec's maximum of paginacao.itensPorPagina.
const MaxReceivedPerPage = 1000

// ReceivedPage is one page of GET /pix.
type ReceivedPage struct {
	// Items are the page's PIX, each the spec's Pix object as the PSP sent
	// it, raw: the catch-up decodes each exactly as a webhook's item
	// (notification.DecodeAPIPixItem).
	Items []json.RawMessage
	// Page is parametros.paginacao.paginaAtual; Pages is
	// quantidadeDePaginas (at least 1); TotalItems is
	// quantidadeTotalDeItens.
	Page, Pages, TotalItems int
}

// ReceivedLister is what the PSP catch-up needs of a PSP: the PSP's own
// record of the PIX it received.
type ReceivedLister interface {
	ListReceived(ctx context.Context, q ReceivedQuery) (ReceivedPage, error)
}

// Webhook is the PSP's registration of our webhook for one key (GET
// /webhook/{chave}).
type Webhook struct {
	WebhookURL string    `json:"webhookUrl"`
	CreatedAt  time.Time `json:"criacao"`
}

// WebhookRegistrar registers, reads and removes our webhook at the PSP
// (PUT, GET and DELETE /webhook/{chave}).
type WebhookRegistrar interface {
	SetWebhook(ctx context.Context, chave, webhookURL string) error
	GetWebhook(ctx context.Context, chave string) (Webhook, error)
	DeleteWebhook(ctx context.Context, chave string) error
}
