package results

import (
	"bufio"
	"bytes"
	"crypto/sha256"
	"encoding/base64"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"strings"
)

// A Job hands its results to the operator in two parts. Its container's termination message
// (which Kubernetes caps at 4 KB and the operator reads from the pod's status) carries a
// Handoff: how the step ended, and the size and SHA-256 of its payload. The payload itself
// goes to the container's log between two frame lines, base64-encoded, where no size limit
// cuts it short; the operator reads it from the log, checks it against the Handoff, and
// stores it. So nothing is lost at the termination message's limit, and a log that was cut
// or mixed with other output is detected instead of being read wrong.

// HandoffVersion is the version of the Handoff and frame layout; readers refuse others.
const HandoffVersion = 2

// Payload kinds.
const (
	// PayloadDocument is a results Document as gzip-compressed JSON (the runner's steps).
	PayloadDocument = "document"
	// PayloadK6Summary is k6's end-of-test summary as JSON (handleSummary's data).
	PayloadK6Summary = "k6-summary"
	// PayloadReadsCPU is a ReadsCPU as JSON: a round of the k6 reads as its meter read it.
	PayloadReadsCPU = "reads-cpu"
)

// MaxHandoffBytes is what Kubernetes keeps of a termination message.
const MaxHandoffBytes = 4096

// maxHandoffError keeps a long error within the termination message.
const maxHandoffError = 2048

// Handoff is a Job's termination message.
type Handoff struct {
	V           int    `json:"v"`
	Payload     string `json:"payload"`
	Bytes       int    `json:"bytes"`
	SHA256      string `json:"sha256"`
	Error       string `json:"error,omitempty"`
	Interrupted bool   `json:"interrupted,omitempty"`
}

// NewHandoff describes payload, of the given kind.
func NewHandoff(kind string, payload []byte, stepErr error, interrupted bool) Handoff {
	sum := sha256.Sum256(payload)
	h := Handoff{V: HandoffVersion, Payload: kind, Bytes: len(payload), SHA256: hex.EncodeToString(sum[:]), Interrupted: interrupted}
	if stepErr != nil {
		h.Error = stepErr.Error()
		if len(h.Error) > maxHandoffError {
			h.Error = h.Error[:maxHandoffError] + "..."
		}
	}
	return h
}

// Marshal encodes the Handoff for the termination message; it always fits.
func (h Handoff) Marshal() []byte {
	data, _ := json.Marshal(h)
	return data
}

// ParseHandoff reads a termination message.
func ParseHandoff(message string) (Handoff, error) {
	var h Handoff
	if err := json.Unmarshal([]byte(message), &h); err != nil {
		return h, fmt.Errorf("the termination message is not a couchbench handoff: %w", err)
	}
	if h.V != HandoffVersion {
		return h, fmt.Errorf("handoff version %d, this couchbench reads %d", h.V, HandoffVersion)
	}
	return h, nil
}

func frameLines(kind string) (begin, end string) {
	return "-----BEGIN COUCHBENCH " + strings.ToUpper(kind) + "-----", "-----END COUCHBENCH " + strings.ToUpper(kind) + "-----"
}

// WriteFrame writes payload to w as a frame: a begin line, base64 lines of 76 characters
// (short lines survive every log pipeline intact), an end line.
func WriteFrame(w io.Writer, kind string, payload []byte) error {
	begin, end := frameLines(kind)
	enc := base64.StdEncoding.EncodeToString(payload)
	var b strings.Builder
	b.WriteString("\n" + begin + "\n")
	for len(enc) > 76 {
		b.WriteString(enc[:76] + "\n")
		enc = enc[76:]
	}
	if enc != "" {
		b.WriteString(enc + "\n")
	}
	b.WriteString(end + "\n")
	_, err := io.WriteString(w, b.String())
	return err
}

// ErrNoFrame says a log holds no complete frame of the kind asked for.
var ErrNoFrame = errors.New("no complete couchbench frame in the log")

// ReadFrame finds the last complete frame of the kind in a log and checks it against the
// Handoff. The container's log holds stdout and stderr line by line as they came, so a
// progress line written to stderr can land inside the frame (seen in the e2e suite): a line
// of anything but base64 is not the frame's and is passed over; the checksum still tells a
// frame that lost or gained base64.
func ReadFrame(log io.Reader, h Handoff) ([]byte, error) {
	begin, end := frameLines(h.Payload)
	var (
		inside  bool
		current strings.Builder
		last    *string
	)
	sc := bufio.NewScanner(log)
	sc.Buffer(make([]byte, 64*1024), 16*1024*1024)
	for sc.Scan() {
		line := strings.TrimSpace(sc.Text())
		switch {
		case line == begin:
			inside = true
			current.Reset()
		case line == end && inside:
			inside = false
			s := current.String()
			last = &s
		case inside && isBase64Line(line):
			current.WriteString(line)
		}
	}
	if err := sc.Err(); err != nil {
		return nil, fmt.Errorf("reading the log: %w", err)
	}
	if last == nil {
		return nil, fmt.Errorf("%w (%s)", ErrNoFrame, h.Payload)
	}
	payload, err := base64.StdEncoding.DecodeString(*last)
	if err != nil {
		return nil, fmt.Errorf("the %s frame in the log is not base64: %w", h.Payload, err)
	}
	sum := sha256.Sum256(payload)
	if len(payload) != h.Bytes || hex.EncodeToString(sum[:]) != h.SHA256 {
		return nil, fmt.Errorf("the %s frame in the log has %d bytes and SHA-256 %s, the termination message says %d and %s: "+
			"the log was cut or mixed", h.Payload, len(payload), hex.EncodeToString(sum[:]), h.Bytes, h.SHA256)
	}
	return payload, nil
}

// isBase64Line says whether a line is made of the standard base64 alphabet only, as every
// line WriteFrame writes between its begin and end lines is.
func isBase64Line(line string) bool {
	return line != "" && strings.Trim(line, "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/=") == ""
}

// isGzip tells gzip data by its magic number.
func isGzip(data []byte) bool { return bytes.HasPrefix(data, []byte{0x1f, 0x8b}) }
