package history

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"runtime"
)

// streamParallel is Stream with the parsing spread over workers: one
// goroutine reads lines into chunks, workers parse chunks, and the caller
// validates them in file order and hands each to emit, so the result (ops,
// truncation, the first error and its line) is the Reader's.
func streamParallel(rd io.Reader, emit func(Op) error, workers, chunkLines int) (bool, error) {
	const chunkBytes = 1 << 20
	type chunk struct {
		data []byte
		ends []int
		term []bool
		ops  []Op
		errs []error
		rerr error // a read error after these lines
		done chan struct{}
	}
	var errEmpty = errors.New("empty line")
	// Chunks go back to the reader once validated, so that a long history
	// makes little garbage.
	free := make(chan *chunk, 4*workers)
	newChunk := func() *chunk {
		select {
		case c := <-free:
			c.data, c.ends, c.term, c.rerr = c.data[:0], c.ends[:0], c.term[:0], nil
			c.done = make(chan struct{})
			return c
		default:
			return &chunk{done: make(chan struct{})}
		}
	}
	work := make(chan *chunk, workers)
	order := make(chan *chunk, 2*workers)
	stop := make(chan struct{})
	defer close(stop)

	go func() { // the reader
		defer close(work)
		defer close(order)
		r := NewReader(rd)
		c := newChunk()
		send := func() bool {
			select {
			case order <- c:
			case <-stop:
				return false
			}
			select {
			case work <- c:
			case <-stop:
				return false
			}
			c = newChunk()
			return true
		}
		for {
			raw, terminated, err := r.readLine()
			if err == io.EOF && raw == nil {
				send()
				return
			}
			if err != nil && err != io.EOF {
				c.rerr = fmt.Errorf("history: read: %w", err)
				send()
				return
			}
			c.data = append(c.data, raw...)
			c.ends = append(c.ends, len(c.data))
			c.term = append(c.term, terminated)
			if !terminated {
				send()
				return
			}
			if len(c.ends) >= chunkLines || len(c.data) >= chunkBytes {
				if !send() {
					return
				}
			}
		}
	}()
	for range workers {
		go func() { // a parser
			in := interner{}
			for c := range work {
				c.ops = append(c.ops[:0], make([]Op, len(c.ends))...)
				c.errs = append(c.errs[:0], make([]error, len(c.ends))...)
				start := 0
				for i, end := range c.ends {
					raw := c.data[start:end]
					start = end
					if len(bytes.TrimSpace(raw)) == 0 {
						c.errs[i] = errEmpty
						continue
					}
					op, ok := parseFast(raw, in)
					if !ok {
						op, c.errs[i] = parseSlow(raw)
					}
					c.ops[i] = op
				}
				close(c.done)
			}
		}()
	}
	v := validator{procs: map[int]*procState{}}
	var blank int64 // see Reader.blank
	for c := range order {
		<-c.done
		for i := range c.ops {
			v.line++
			switch err := c.errs[i]; {
			case err == errEmpty:
				if blank == 0 {
					blank = v.line
				}
				if !c.term[i] {
					return false, nil
				}
				continue
			case blank != 0:
				v.line = blank
				return false, v.fail("empty line")
			case err != nil:
				if !c.term[i] {
					return true, nil // the writer died in this line
				}
				return false, v.fail("%s", err)
			}
			if err := v.validate(c.ops[i]); err != nil {
				return false, err
			}
			if err := emit(c.ops[i]); err != nil {
				return false, err
			}
		}
		if c.rerr != nil {
			return false, c.rerr
		}
		select {
		case free <- c:
		default:
		}
	}
	return false, nil
}

func parseWorkers() int {
	return min(runtime.GOMAXPROCS(0), 4)
}
