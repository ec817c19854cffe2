/*
Copyright The events-apiserver Authors.

Licensed under the Apache License, Version 2.0 (the "License");
you may not use this file except in compliance with the License.
You may obtain a copy of the License at

    http://www.apache.org/licenses/LICENSE-2.0

Unless required by applicable law or agreed to in writing, software
distributed under the License is distributed on an "AS IS" BASIS,
WITHOUT WARRANTIES OR CONDITIONS OF ANY KIND, either express or implied.
See the License for the specific language governing permissions and
limitations under the License.
*/

package victorialogs

import (
	"bufio"
	"bytes"
	"context"
	"crypto/tls"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"sync/atomic"
	"time"

	"github.com/kube-events/events-apiserver/pkg/archive"
)

// DefaultServiceFlushInterval is VictoriaLogs' default
// -inmemoryDataFlushInterval.
const DefaultServiceFlushInterval = 5 * time.Second

// DefaultResponseTimeout bounds how long a request waits for the service
// to connect and start its answer. A service that went away without
// closing its connections (a pod deleted, a node lost: packets dropped,
// no reset) then fails a request within it, and a history list answers
// 503, instead of waiting for the client's one-minute timeout. The
// service starts its answers in well under a second (a page's query is
// bounded by -search.maxQueryLen and the page's limit).
const DefaultResponseTimeout = 15 * time.Second

// HTTPConfig configures an archive kept by a VictoriaLogs service: the
// single-node victoria-logs, or a cluster's vlinsert and vlselect.
type HTTPConfig struct {
	// URL is the service's base URL, for appends and queries alike (a
	// single node, or a cluster node that serves both roles).
	URL string
	// SelectURL, when set, is where queries go instead (a cluster's
	// vlselect, URL being its vlinsert).
	SelectURL string
	// AccountID and ProjectID are the VictoriaLogs tenant the records
	// live in, so that one service can hold several archives.
	AccountID, ProjectID uint32
	// Retention must be the service's -retentionPeriod: queries do not
	// look further back. DefaultRetention when zero.
	Retention time.Duration
	// FlushInterval must be the storage nodes' -inmemoryDataFlushInterval:
	// Sync waits for rows to reach disk a minute longer than twice that.
	// DefaultServiceFlushInterval when zero.
	FlushInterval time.Duration
	// ResponseTimeout bounds the wait for the service to connect and start
	// an answer, when Client is nil; DefaultResponseTimeout when zero.
	ResponseTimeout time.Duration
	// TLS verifies a service reached over https (the URLs' scheme) and
	// sets the certificate the client presents; it needs https URLs. It
	// applies when Client is nil.
	TLS TLSConfig
	// Auth authenticates every request; none when empty.
	Auth AuthConfig
	// Client sends the requests; when nil, a client with a one-minute
	// timeout, ResponseTimeout and TLS.
	Client *http.Client
}

// HTTP is an archive kept by a VictoriaLogs service, written through its
// JSON lines API (/insert/jsonline) and read through LogsQL
// (/select/logsql/query): the same queries as Embedded.
type HTTP struct {
	cfg      HTTPConfig
	auth     *authenticator
	appended appendLog
	// noSnapshots is set once the service answered that it has no
	// partition snapshots (a cluster's vlinsert): Sync then waits for its
	// flush interval.
	noSnapshots atomic.Bool
}

var _ archive.Archive = &HTTP{}

// NewHTTP returns the archive of the service cfg.URL names. It reads the
// TLS and credential files once, and does not contact the service.
func NewHTTP(cfg HTTPConfig) (*HTTP, error) {
	for _, u := range []string{cfg.URL, cfg.SelectURL} {
		if u == "" {
			continue
		}
		parsed, err := url.Parse(u)
		if err != nil || parsed.Host == "" || (parsed.Scheme != "http" && parsed.Scheme != "https") {
			return nil, fmt.Errorf("archive URL %q is not an absolute http or https URL", u)
		}
		if cfg.TLS.enabled() && parsed.Scheme != "https" {
			return nil, fmt.Errorf("archive URL %q: the TLS settings need an https URL", u)
		}
	}
	if cfg.URL == "" {
		return nil, errors.New("the archive service needs a URL")
	}
	auth, err := newAuthenticator(cfg.Auth)
	if err != nil {
		return nil, err
	}
	cfg.URL = strings.TrimSuffix(cfg.URL, "/")
	if cfg.SelectURL == "" {
		cfg.SelectURL = cfg.URL
	}
	cfg.SelectURL = strings.TrimSuffix(cfg.SelectURL, "/")
	if cfg.Retention == 0 {
		cfg.Retention = DefaultRetention
	}
	if cfg.FlushInterval == 0 {
		cfg.FlushInterval = DefaultServiceFlushInterval
	}
	if cfg.ResponseTimeout == 0 {
		cfg.ResponseTimeout = DefaultResponseTimeout
	}
	if cfg.Client == nil {
		tlsConfig, err := newTLSConfig(cfg.TLS)
		if err != nil {
			return nil, err
		}
		cfg.Client = newClient(cfg.ResponseTimeout, tlsConfig)
	}
	return &HTTP{cfg: cfg, auth: auth}, nil
}

// newClient is the default client: http.DefaultTransport's settings and
// tlsConfig, with connects and the start of each answer (TLS handshakes
// included) bounded by responseTimeout, and each request by a minute.
func newClient(responseTimeout time.Duration, tlsConfig *tls.Config) *http.Client {
	transport := http.DefaultTransport.(*http.Transport).Clone()
	transport.DialContext = (&net.Dialer{Timeout: responseTimeout, KeepAlive: 30 * time.Second}).DialContext
	transport.TLSHandshakeTimeout = responseTimeout
	transport.ResponseHeaderTimeout = responseTimeout
	transport.TLSClientConfig = tlsConfig
	return &http.Client{Timeout: time.Minute, Transport: transport}
}

func (h *HTTP) newRequest(ctx context.Context, base, path string, params url.Values, body io.Reader) (*http.Request, error) {
	u := base + path
	if len(params) > 0 {
		u += "?" + params.Encode()
	}
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, u, body)
	if err != nil {
		return nil, err
	}
	req.Header.Set("AccountID", strconv.FormatUint(uint64(h.cfg.AccountID), 10))
	req.Header.Set("ProjectID", strconv.FormatUint(uint64(h.cfg.ProjectID), 10))
	if err := h.auth.authenticate(req); err != nil {
		// A credential file the server cannot read right now.
		return nil, archive.Unavailable("%s %s: %w", req.Method, req.URL.Path, err)
	}
	return req, nil
}

// do sends req and returns the response of a 2xx answer. It fails with
// archive.ErrUnavailable when the service cannot be reached (a TLS
// handshake that fails included), refuses the credentials (401, 403:
// also while a rotated password has reached one side only), or answers
// 5xx (vlselect answers 502 when a storage node is down).
func (h *HTTP) do(req *http.Request) (*http.Response, error) {
	resp, err := h.cfg.Client.Do(req)
	if err != nil {
		return nil, archive.Unavailable("%s %s: %w", req.Method, req.URL.Path, err)
	}
	if resp.StatusCode/100 == 2 {
		return resp, nil
	}
	defer resp.Body.Close()
	msg, _ := io.ReadAll(io.LimitReader(resp.Body, 4096))
	err = fmt.Errorf("%s %s: %s: %s", req.Method, req.URL.Path, resp.Status, bytes.TrimSpace(msg))
	switch {
	case resp.StatusCode == http.StatusUnauthorized || resp.StatusCode == http.StatusForbidden:
		err = archive.Unavailable("%s %s: %s: %s", req.Method, req.URL.Path, resp.Status, h.auth.refused())
	case resp.StatusCode >= 500 || resp.StatusCode == http.StatusTooManyRequests:
		err = archive.Unavailable("%w", err)
	}
	return nil, &refusal{code: resp.StatusCode, err: err}
}

// Append sends records to the service; it returns once the service
// accepted them.
func (h *HTTP) Append(ctx context.Context, records []archive.Record) error {
	if len(records) == 0 {
		return nil
	}
	var body bytes.Buffer
	var cols []field
	row := map[string]string{}
	enc := json.NewEncoder(&body)
	for i := range records {
		r := &records[i]
		var err error
		if cols, err = encodeRecord(cols[:0], r); err != nil {
			return err
		}
		clear(row)
		for _, c := range cols {
			row[c.Name] = c.Value
		}
		row[colTime] = formatTime(r.Time)
		if err := enc.Encode(row); err != nil {
			return err
		}
	}
	params := url.Values{
		"_stream_fields": {strings.Join(streamFields, ",")},
		"_time_field":    {colTime},
		"_msg_field":     {colObject},
	}
	req, err := h.newRequest(ctx, h.cfg.URL, "/insert/jsonline", params, &body)
	if err != nil {
		return err
	}
	req.Header.Set("Content-Type", "application/stream+json")
	resp, err := h.do(req)
	if err != nil {
		return err
	}
	_, _ = io.Copy(io.Discard, resp.Body)
	_ = resp.Body.Close()
	return h.appended.record(records, h.cfg.Retention)
}

// Sync asks the service to flush what it buffers and write it to disk
// (persist), then waits until every state appended since the last Sync
// began is visible (counted by resourceVersion ranges) and on disk
// (block_stats names a file part for each block that holds one of them; a
// block of an in-memory part has none). A state the service lost (a
// storage node killed before its flush) never becomes visible: Sync then
// fails after a minute (and twice FlushInterval), and the archiver appends
// it again.
func (h *HTTP) Sync(ctx context.Context) error {
	return h.appended.sync(ctx, h, h.persist, time.Minute+2*h.cfg.FlushInterval)
}

// persist asks the service to flush what it buffers (/internal/force_flush:
// a vlinsert sends its buffers to the storage nodes), then, as the
// embedded archive does, to snapshot the partitions of days and delete the
// snapshots again: a snapshot writes a partition's in-memory parts to disk
// first, where the service would otherwise write them on its flush
// interval. A cluster's vlinsert has no snapshots (only its storage nodes
// do): Sync then waits for the storage nodes' flush interval.
func (h *HTTP) persist(ctx context.Context, days []string) error {
	if _, err := h.call(ctx, "/internal/force_flush", nil); err != nil {
		return err
	}
	if h.noSnapshots.Load() {
		return nil
	}
	for _, day := range days {
		body, err := h.call(ctx, "/internal/partition/snapshot/create", url.Values{"partition_prefix": {day}})
		var refused *refusal
		if errors.As(err, &refused) && refused.code/100 == 4 && refused.code != http.StatusTooManyRequests {
			// No snapshots here: a vlinsert ("unsupported path"), or a
			// node that wants its -partitionManageAuthKey (the
			// credentials force_flush just took do not open them).
			// waitOnDisk waits for the flush interval instead.
			h.noSnapshots.Store(true)
			return nil
		}
		if err != nil {
			return err
		}
		var snapshots []string
		if err := json.Unmarshal(body, &snapshots); err != nil {
			return fmt.Errorf("/internal/partition/snapshot/create answered %q: %w", body, err)
		}
		for _, snapshot := range snapshots {
			if _, err := h.call(ctx, "/internal/partition/snapshot/delete", url.Values{"path": {snapshot}}); err != nil {
				return err
			}
		}
	}
	return nil
}

// refusal is an answer of the service that is not 2xx, as do reports it:
// err, unavailable or not, and the status code.
type refusal struct {
	code int
	err  error
}

func (r *refusal) Error() string { return r.err.Error() }
func (r *refusal) Unwrap() error { return r.err }

// call posts to path on the service and returns its 2xx answer's body.
func (h *HTTP) call(ctx context.Context, path string, params url.Values) ([]byte, error) {
	req, err := h.newRequest(ctx, h.cfg.URL, path, params, nil)
	if err != nil {
		return nil, err
	}
	resp, err := h.do(req)
	if err != nil {
		return nil, err
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(io.LimitReader(resp.Body, 1<<20))
	if err != nil {
		return nil, archive.Unavailable("%s %s: %w", req.Method, req.URL.Path, err)
	}
	return body, nil
}

// Query answers q; see archive.Archive.
func (h *HTTP) Query(ctx context.Context, q archive.Query) (archive.Page, error) {
	return queryPage(ctx, h, q, h.cfg.Retention, time.Now())
}

// Summarize answers q; see archive.Archive.
func (h *HTTP) Summarize(ctx context.Context, q archive.SummaryQuery) ([]archive.SummaryRow, error) {
	return summarize(ctx, h, q, h.cfg.Retention, time.Now())
}

func (h *HTTP) run(ctx context.Context, query string, fn func(row map[string]string) error) error {
	form := url.Values{
		"query": {query},
		// A service configured with -search.allowPartialResponse must not
		// answer the archive short.
		"allow_partial_response": {"false"},
	}
	req, err := h.newRequest(ctx, h.cfg.SelectURL, "/select/logsql/query", nil, strings.NewReader(form.Encode()))
	if err != nil {
		return err
	}
	req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
	resp, err := h.do(req)
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	scanner := bufio.NewScanner(resp.Body)
	scanner.Buffer(nil, 64<<20)
	row := map[string]string{}
	for scanner.Scan() {
		line := scanner.Bytes()
		if len(bytes.TrimSpace(line)) == 0 {
			continue
		}
		clear(row)
		if err := json.Unmarshal(line, &row); err != nil {
			// An error met after the answer began comes as text after
			// the rows, with the 200 already sent.
			return archive.Unavailable("archive query answered %q", truncate(line, 512))
		}
		if err := fn(row); err != nil {
			return err
		}
	}
	if err := scanner.Err(); err != nil {
		// A cut connection ends a chunked answer early: an error, not a
		// short answer.
		return archive.Unavailable("reading the archive's answer: %w", err)
	}
	return nil
}

func truncate(b []byte, n int) string {
	if len(b) > n {
		return string(b[:n]) + "..."
	}
	return string(b)
}

// Stats counts the service's rows and sums the on-disk sizes of their
// columns' data, dictionaries and bloom filters (LogsQL's block_stats),
// which leaves out indexes and block headers.
func (h *HTTP) Stats(ctx context.Context) (archive.Stats, error) {
	var s archive.Stats
	err := h.run(ctx, "* | stats count() as rows", func(row map[string]string) error {
		n, err := strconv.ParseInt(row["rows"], 10, 64)
		s.Rows = n
		return err
	})
	if err != nil {
		return s, err
	}
	err = h.run(ctx, "* | block_stats | stats sum(values_bytes) as v, sum(dict_bytes) as d, sum(bloom_bytes) as b", func(row map[string]string) error {
		for _, k := range []string{"v", "d", "b"} {
			if row[k] == "" {
				continue
			}
			n, err := strconv.ParseFloat(row[k], 64)
			if err != nil {
				return err
			}
			s.DiskBytes += int64(n)
		}
		return nil
	})
	return s, err
}

// Close releases nothing: the service keeps the records.
func (h *HTTP) Close() error {
	h.cfg.Client.CloseIdleConnections()
	return nil
}
