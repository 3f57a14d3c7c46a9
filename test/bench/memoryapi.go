/*
Copyright 2026.

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

package bench

import (
	"bytes"
	"fmt"
	"io"
	"net/http"
	"strconv"
	"strings"
	"sync"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/runtime/serializer/streaming"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/client-go/kubernetes/scheme"
	"k8s.io/client-go/rest"
	restclientwatch "k8s.io/client-go/rest/watch"
)

// MemoryAPI answers the pod LIST and WATCH requests of a REST client inside the process,
// as an http.RoundTripper: no socket, no kube-apiserver. It lets the in-process
// workloads fill controller-runtime's and deltacache's caches (whose ListerWatchers are
// internal) with many pods quickly.
//
// LIST /api/v1/pods is paginated by limit and continue. A WATCH with
// sendInitialEvents=true (WatchList, KEP-3157) streams every pod as ADDED, then the
// BOOKMARK annotated k8s.io/initial-events-end, then stays open, silent; any other
// WATCH just stays open, silent. Watches end with the request's context or when the
// client closes the body. Everything is encoded as protobuf when the client accepts it,
// as JSON otherwise. Other paths get 404.
type MemoryAPI struct {
	pods  []corev1.Pod
	rv    string
	proto codec
	json  codec
}

// codec is one media type's encoders: objects, and watch streams.
type codec struct {
	contentType       string
	streamContentType string
	encoder           runtime.Encoder
	stream            *runtime.StreamSerializerInfo
}

// NewMemoryAPI serves pods (not copied) at resourceVersion rv.
func NewMemoryAPI(pods []corev1.Pod, rv string) (*MemoryAPI, error) {
	encoder := func(mediaType string) (codec, error) {
		info, ok := runtime.SerializerInfoForMediaType(scheme.Codecs.SupportedMediaTypes(), mediaType)
		if !ok || info.StreamSerializer == nil {
			return codec{}, fmt.Errorf("no serializer for %s", mediaType)
		}
		return codec{
			contentType:       mediaType,
			streamContentType: mediaType + ";stream=watch",
			encoder:           scheme.Codecs.EncoderForVersion(info.Serializer, corev1.SchemeGroupVersion),
			stream:            info.StreamSerializer,
		}, nil
	}
	proto, err := encoder(runtime.ContentTypeProtobuf)
	if err != nil {
		return nil, err
	}
	json, err := encoder(runtime.ContentTypeJSON)
	if err != nil {
		return nil, err
	}
	return &MemoryAPI{pods: pods, rv: rv, proto: proto, json: json}, nil
}

// Config returns a rest.Config whose requests this MemoryAPI answers.
func (m *MemoryAPI) Config() *rest.Config {
	return &rest.Config{Host: "http://memory-api.invalid", Transport: m, QPS: -1}
}

// Mapper returns a RESTMapper that knows pods, so the caches need no discovery.
func (m *MemoryAPI) Mapper() meta.RESTMapper {
	mapper := meta.NewDefaultRESTMapper([]schema.GroupVersion{corev1.SchemeGroupVersion})
	mapper.Add(corev1.SchemeGroupVersion.WithKind("Pod"), meta.RESTScopeNamespace)
	return mapper
}

// RoundTrip answers req.
func (m *MemoryAPI) RoundTrip(req *http.Request) (*http.Response, error) {
	if req.Method != http.MethodGet || req.URL.Path != "/api/v1/pods" {
		return m.status(req, apierrors.NewNotFound(schema.GroupResource{Resource: req.URL.Path}, ""))
	}
	q := req.URL.Query()
	if w := q.Get("watch"); w == trueValue || w == "1" {
		return m.watch(req, q.Get("sendInitialEvents") == trueValue), nil
	}
	return m.list(req, q.Get("limit"), q.Get("continue"))
}

func (m *MemoryAPI) list(req *http.Request, limitParam, continueParam string) (*http.Response, error) {
	start, end := 0, len(m.pods)
	if continueParam != "" {
		n, err := strconv.Atoi(continueParam)
		if err != nil || n < 0 || n > len(m.pods) {
			return m.status(req, apierrors.NewBadRequest("invalid continue token"))
		}
		start = n
	}
	cont := ""
	if limitParam != "" {
		limit, err := strconv.Atoi(limitParam)
		if err != nil || limit < 0 {
			return m.status(req, apierrors.NewBadRequest("invalid limit"))
		}
		if limit > 0 && start+limit < end {
			end = start + limit
			cont = strconv.Itoa(end)
		}
	}
	list := &corev1.PodList{ListMeta: metav1.ListMeta{ResourceVersion: m.rv, Continue: cont}, Items: m.pods[start:end]}
	return m.encode(req, http.StatusOK, list)
}

// watch returns a streaming response: the initial events if initial, then nothing
// until the request's context ends or the client closes the body.
func (m *MemoryAPI) watch(req *http.Request, initial bool) *http.Response {
	c := m.codecFor(req)
	pr, pw := io.Pipe()
	body := &watchBody{PipeReader: pr, closed: make(chan struct{})}
	go func() {
		enc := restclientwatch.NewEncoder(streaming.NewEncoder(c.stream.NewFrameWriter(pw), c.stream.Serializer), c.encoder)
		var err error
		if initial {
			err = m.sendInitialEvents(enc)
		}
		if err == nil {
			select {
			case <-req.Context().Done():
			case <-body.closed:
			}
		}
		_ = pw.CloseWithError(err)
	}()
	return &http.Response{
		StatusCode: http.StatusOK,
		Header:     http.Header{headerContentType: []string{c.streamContentType}},
		Body:       body,
		Request:    req,
	}
}

// sendInitialEvents writes every pod as ADDED, then the bookmark that ends them.
func (m *MemoryAPI) sendInitialEvents(enc *restclientwatch.Encoder) error {
	for i := range m.pods {
		if err := enc.Encode(&watch.Event{Type: watch.Added, Object: &m.pods[i]}); err != nil {
			return err
		}
	}
	bookmark := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{
		ResourceVersion: m.rv,
		Annotations:     map[string]string{metav1.InitialEventsAnnotationKey: trueValue},
	}}
	return enc.Encode(&watch.Event{Type: watch.Bookmark, Object: bookmark})
}

func (m *MemoryAPI) codecFor(req *http.Request) codec {
	if strings.Contains(req.Header.Get("Accept"), runtime.ContentTypeProtobuf) {
		return m.proto
	}
	return m.json
}

func (m *MemoryAPI) status(req *http.Request, err apierrors.APIStatus) (*http.Response, error) {
	st := err.Status()
	st.APIVersion, st.Kind = "v1", "Status"
	var buf bytes.Buffer
	if encErr := scheme.Codecs.LegacyCodec(metav1.SchemeGroupVersion).Encode(&st, &buf); encErr != nil {
		return nil, encErr
	}
	return &http.Response{
		StatusCode: int(st.Code),
		Header:     http.Header{headerContentType: []string{runtime.ContentTypeJSON}},
		Body:       io.NopCloser(&buf),
		Request:    req,
	}, nil
}

func (m *MemoryAPI) encode(req *http.Request, code int, obj runtime.Object) (*http.Response, error) {
	c := m.codecFor(req)
	var buf bytes.Buffer
	if err := c.encoder.Encode(obj, &buf); err != nil {
		return nil, err
	}
	return &http.Response{
		StatusCode:    code,
		Header:        http.Header{headerContentType: []string{c.contentType}},
		Body:          io.NopCloser(&buf),
		ContentLength: int64(buf.Len()),
		Request:       req,
	}, nil
}

// watchBody is a watch response body; Close ends the stream.
type watchBody struct {
	*io.PipeReader
	closed    chan struct{}
	closeOnce sync.Once
}

func (b *watchBody) Close() error {
	b.closeOnce.Do(func() { close(b.closed) })
	return b.PipeReader.Close()
}
