package web

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"mime"
	"net/http"
	"os"
	"path"
	"slices"
	"strconv"
	"strings"
	"unicode/utf8"

	"github.com/llmprobe/llmprobe/internal/sweepd"
	"github.com/llmprobe/llmprobe/prober/capacity"
	"github.com/llmprobe/llmprobe/prober/config"
	"github.com/llmprobe/llmprobe/prober/jsonkind"
)

// MaxSweepBodyBytes caps the body of POST /api/v1/sweeps; a larger one is
// answered 413.
const MaxSweepBodyBytes = 1 << 20

// SweepService is what the sweep API calls; *sweepd.Service implements it.
type SweepService interface {
	Start(target string, spec config.SweepSpec) (sweepd.Status, error)
	List() []sweepd.Status
	Get(id string) (sweepd.Status, error)
	Cancel(id string) (sweepd.Status, error)
	File(id, name string) (*os.File, error)
	// LastOf and Running feed the landing page.
	LastOf(target string) (name string, last capacity.Last, ok bool)
	Running(target string) (id string, ok bool)
}

// SweepRequest is the body of POST /api/v1/sweeps: the target's name and
// the sweep's spec (the sweep CLI's fields, docs/sweep-api.md), whose keys
// sweep.FromSpec decodes.
type SweepRequest struct {
	Target string
	config.SweepSpec
}

// decodeSweepRequest reads the body of POST /api/v1/sweeps: a JSON object
// (decodeObject's checks), target a string.
func decodeSweepRequest(body []byte) (SweepRequest, error) {
	raw, err := decodeObject(body)
	if err != nil {
		return SweepRequest{}, err
	}
	var req SweepRequest
	if t, ok := raw["target"]; ok {
		if err := json.Unmarshal(t, &req.Target); err != nil {
			return SweepRequest{}, errors.New("target: want a string, the name of a configured target")
		}
		delete(raw, "target")
	}
	req.SweepSpec, err = config.SweepSpecFromJSON(raw)
	return req, err
}

// sweepsDisabled answers every sweep API path when the API is off.
func sweepsDisabled(w http.ResponseWriter, _ *http.Request) {
	jsonError(w, http.StatusForbidden, "Sweep API is not enabled: start llmprobe with --web.enable-sweeps.", nil)
}

// addSweepRoutes serves the sweep API on mux (or its refusal, when
// disabled).
func addSweepRoutes(mux *http.ServeMux, o Options) {
	if !o.EnableSweeps || o.Sweeps == nil {
		mux.HandleFunc("/api/v1/sweeps", sweepsDisabled)
		mux.HandleFunc("/api/v1/sweeps/", sweepsDisabled)
		return
	}
	svc := o.Sweeps
	starts := newRouteLimit("POST /api/v1/sweeps", MaxSweepStarts, MaxSweepBodyBytes, true)
	reads := newRouteLimit("GET and DELETE /api/v1/sweeps", MaxSweepReads, MaxNoBodyBytes, true)
	files := newRouteLimit("GET /api/v1/sweeps/{id}/files", MaxSweepFileReads, MaxNoBodyBytes, true)
	mux.HandleFunc("POST /api/v1/sweeps", starts.wrap(func(w http.ResponseWriter, r *http.Request) { postSweep(svc, w, r) }))
	mux.HandleFunc("GET /api/v1/sweeps", reads.wrap(func(w http.ResponseWriter, r *http.Request) { listSweeps(svc, w, r) }))
	mux.HandleFunc("GET /api/v1/sweeps/{id}", reads.wrap(func(w http.ResponseWriter, r *http.Request) {
		st, err := svc.Get(r.PathValue("id"))
		if err != nil {
			serviceError(w, err)
			return
		}
		writeJSON(w, http.StatusOK, st)
	}))
	mux.HandleFunc("DELETE /api/v1/sweeps/{id}", reads.wrap(func(w http.ResponseWriter, r *http.Request) {
		st, err := svc.Cancel(r.PathValue("id"))
		if err != nil {
			serviceError(w, err)
			return
		}
		writeJSON(w, http.StatusOK, st)
	}))
	mux.HandleFunc("GET /api/v1/sweeps/{id}/files/{name}", files.wrap(func(w http.ResponseWriter, r *http.Request) {
		serveSweepFile(svc, w, r)
	}))
	// Other methods on these paths, and other paths under the API (the
	// landing page's "/" would answer them otherwise).
	mux.HandleFunc("/api/v1/sweeps", func(w http.ResponseWriter, _ *http.Request) {
		w.Header().Set("Allow", "GET, POST")
		jsonError(w, http.StatusMethodNotAllowed, "method not allowed: GET lists sweeps, POST starts one", nil)
	})
	mux.HandleFunc("/api/v1/sweeps/", func(w http.ResponseWriter, r *http.Request) {
		parts := strings.Split(strings.TrimPrefix(r.URL.Path, "/api/v1/sweeps/"), "/")
		switch {
		case len(parts) == 1 && parts[0] != "":
			w.Header().Set("Allow", "GET, DELETE")
		case len(parts) == 3 && parts[1] == "files" && parts[0] != "" && parts[2] != "":
			w.Header().Set("Allow", "GET")
		default:
			jsonError(w, http.StatusNotFound, "no such API path", nil)
			return
		}
		jsonError(w, http.StatusMethodNotAllowed, "method not allowed", nil)
	})
}

// listSweeps answers GET /api/v1/sweeps: the newest runs first, at most
// ?limit= of them (1 to MaxListSweeps, default MaxListSweeps), optionally
// only those of ?target=; "total" counts the runs that matched and
// "truncated" says some were left out.
func listSweeps(svc SweepService, w http.ResponseWriter, r *http.Request) {
	q := r.URL.Query()
	limit := MaxListSweeps
	if v := q.Get("limit"); v != "" {
		n, err := strconv.Atoi(v)
		if err != nil || n < 1 || n > MaxListSweeps {
			jsonError(w, http.StatusBadRequest, fmt.Sprintf("limit: must be an integer in [1, %d], got %q", MaxListSweeps, v), nil)
			return
		}
		limit = n
	}
	all := svc.List()
	if t := q.Get("target"); t != "" {
		all = slices.DeleteFunc(all, func(s sweepd.Status) bool { return s.Target != t })
	}
	out := all[:min(len(all), limit)]
	writeJSON(w, http.StatusOK, map[string]any{"sweeps": out, "total": len(all), "truncated": len(out) < len(all)})
}

func postSweep(svc SweepService, w http.ResponseWriter, r *http.Request) {
	if ct := r.Header.Get("Content-Type"); ct != "" {
		if mt, _, err := mime.ParseMediaType(ct); err != nil || mt != "application/json" {
			jsonError(w, http.StatusUnsupportedMediaType, "the body must be JSON (Content-Type: application/json)", nil)
			return
		}
	}
	body, err := io.ReadAll(http.MaxBytesReader(w, r.Body, MaxSweepBodyBytes))
	if err != nil {
		var mbe *http.MaxBytesError
		if errors.As(err, &mbe) {
			jsonError(w, http.StatusRequestEntityTooLarge, fmt.Sprintf("the body is larger than %d bytes", MaxSweepBodyBytes), nil)
			return
		}
		jsonError(w, http.StatusBadRequest, "cannot read the body: "+err.Error(), nil)
		return
	}
	req, err := decodeSweepRequest(body)
	if err != nil {
		jsonError(w, http.StatusBadRequest, err.Error(), nil)
		return
	}
	if req.Target == "" {
		jsonError(w, http.StatusBadRequest, "target: required: the name of a configured target", nil)
		return
	}
	st, err := svc.Start(req.Target, req.SweepSpec)
	if err != nil {
		serviceError(w, err)
		return
	}
	loc := "/api/v1/sweeps/" + st.ID
	w.Header().Set("Location", loc)
	writeJSON(w, http.StatusCreated, map[string]string{"id": st.ID, "status": st.Status, "url": loc})
}

// serviceError answers an error of the SweepService.
func serviceError(w http.ResponseWriter, err error) {
	var busy *sweepd.BusyError
	var spec *config.SpecError
	switch {
	case errors.As(err, &busy):
		jsonError(w, http.StatusConflict, err.Error(), map[string]any{"running_id": busy.ID})
	case errors.As(err, &spec):
		jsonError(w, http.StatusBadRequest, err.Error(), nil)
	case errors.Is(err, sweepd.ErrUnknownTarget):
		jsonError(w, http.StatusBadRequest, "target: "+err.Error(), nil)
	case errors.Is(err, sweepd.ErrNotFound):
		jsonError(w, http.StatusNotFound, err.Error(), nil)
	case errors.Is(err, sweepd.ErrTooMany):
		jsonError(w, http.StatusTooManyRequests, err.Error(), nil)
	case errors.Is(err, sweepd.ErrStopped):
		jsonError(w, http.StatusServiceUnavailable, err.Error(), nil)
	default:
		jsonError(w, http.StatusInternalServerError, err.Error(), nil)
	}
}

// fileTypes are the content types of a run directory's files by extension;
// anything else is served as text/plain.
var fileTypes = map[string]string{
	".json":  "application/json",
	".jsonl": "application/x-ndjson",
	".svg":   "image/svg+xml",
	".md":    "text/markdown; charset=utf-8",
}

func serveSweepFile(svc SweepService, w http.ResponseWriter, r *http.Request) {
	name := r.PathValue("name")
	f, err := svc.File(r.PathValue("id"), name)
	if err != nil {
		serviceError(w, err)
		return
	}
	defer f.Close()
	fi, err := f.Stat()
	if err != nil {
		serviceError(w, err)
		return
	}
	ct, ok := fileTypes[path.Ext(name)]
	if !ok {
		ct = "text/plain; charset=utf-8"
	}
	h := w.Header()
	h.Set("Content-Type", ct)
	h.Set("X-Content-Type-Options", "nosniff")
	// A run directory's files are data: no scripts, even in an SVG.
	h.Set("Content-Security-Policy", "default-src 'none'; style-src 'unsafe-inline'; sandbox")
	http.ServeContent(w, r, name, fi.ModTime(), f)
}

func writeJSON(w http.ResponseWriter, code int, v any) {
	b, err := json.MarshalIndent(v, "", "  ")
	if err != nil {
		http.Error(w, err.Error(), http.StatusInternalServerError)
		return
	}
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(code)
	w.Write(append(b, '\n'))
}

// jsonError answers {"error": msg} (plus extra keys) with code.
func jsonError(w http.ResponseWriter, code int, msg string, extra map[string]any) {
	body := map[string]any{"error": msg}
	for k, v := range extra {
		body[k] = v
	}
	writeJSON(w, code, body)
}

// decodeObject reads body as one JSON object, no key twice: its keys and
// their values.
func decodeObject(body []byte) (map[string]json.RawMessage, error) {
	dec := json.NewDecoder(bytes.NewReader(body))
	var raw map[string]json.RawMessage
	if err := dec.Decode(&raw); err != nil {
		var se *json.SyntaxError
		if errors.As(err, &se) {
			return nil, fmt.Errorf("invalid JSON at byte %d: %v", se.Offset, err)
		}
		if errors.Is(err, io.EOF) {
			return nil, errors.New("the body is empty: want a JSON object")
		}
		if errors.Is(err, io.ErrUnexpectedEOF) {
			return nil, errors.New("invalid JSON: the body ends inside the object")
		}
		return nil, errors.New("the body must be a JSON object")
	}
	if raw == nil {
		return nil, errors.New("the body must be a JSON object")
	}
	if _, err := dec.Token(); !errors.Is(err, io.EOF) {
		return nil, errors.New("data after the JSON object")
	}
	// encoding/json takes a string's invalid UTF-8 (turned into U+FFFD
	// when decoded), yet JSON text must be UTF-8 (RFC 8259 §8.1) and the
	// YAML decoder behind the spec refuses it: say so for the body.
	if !utf8.Valid(body) {
		return nil, fmt.Errorf("invalid JSON at byte %d: the body is not UTF-8 (RFC 8259 §8.1)", firstInvalidUTF8(body))
	}
	if _, ok := raw[""]; ok {
		return nil, errors.New(`the body has an empty key (""): name each key`)
	}
	if err := jsonkind.DuplicateKey(body); err != nil {
		return nil, err
	}
	return raw, nil
}

// firstInvalidUTF8 returns the offset of b's first byte that does not begin
// a valid UTF-8 sequence (len(b) when there is none).
func firstInvalidUTF8(b []byte) int {
	for i := 0; i < len(b); {
		r, n := utf8.DecodeRune(b[i:])
		if r == utf8.RuneError && n == 1 {
			return i
		}
		i += n
	}
	return len(b)
}
