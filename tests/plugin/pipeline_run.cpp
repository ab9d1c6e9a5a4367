#include "pipeline_run.hpp"

#include <gst/app/gstappsrc.h>
#include <gtest/gtest.h>

#include <cstring>

#include "plugin_test_support.hpp"

namespace nccmatch::test {

namespace {

std::vector<Found> foundIn(const GstStructure* s) {
  std::vector<Found> frame;
  const GValue* list = gst_structure_get_value(s, "matches");
  for (guint i = 0; list != nullptr && i < gst_value_list_get_size(list); ++i) {
    const GstStructure* match = gst_value_get_structure(gst_value_list_get_value(list, i));
    Found f;
    gst_structure_get_uint(match, "template", &f.templateIndex);
    gst_structure_get_uint(match, "x", &f.x);
    gst_structure_get_uint(match, "y", &f.y);
    gst_structure_get_double(match, "score", &f.score);
    gst_structure_get_uint64(match, "track-id", &f.trackId);
    if (const char* state = gst_structure_get_string(match, "track-state")) f.trackState = state;
    frame.push_back(f);
  }
  return frame;
}

bool isNccmatch(GstElement* element) {
  GstElementFactory* factory = gst_element_get_factory(element);
  return factory != nullptr && std::strcmp(GST_OBJECT_NAME(factory), "nccmatch") == 0;
}

// Every nccmatch's backend and frame count, from its stats.
void readStats(GstElement* pipeline, PipelineRun* run) {
  GstIterator* it = gst_bin_iterate_recurse(GST_BIN(pipeline));
  GValue item = G_VALUE_INIT;
  while (gst_iterator_next(it, &item) == GST_ITERATOR_OK) {
    GstElement* element = GST_ELEMENT(g_value_get_object(&item));
    if (isNccmatch(element)) {
      GstStructure* stats = nullptr;
      g_object_get(element, "stats", &stats, nullptr);
      ElementRun& e = run->elements[GST_OBJECT_NAME(element)];
      const char* backend = gst_structure_get_string(stats, "backend");
      e.backend = backend != nullptr ? backend : "";
      gst_structure_get_uint64(stats, "frames", &e.frames);
      gst_structure_free(stats);
      if (GstContext* cuda = gst_element_get_context(element, "gst.cuda.context")) {
        const GValue* held = gst_structure_get_value(gst_context_get_structure(cuda), "gst.cuda.context");
        if (held != nullptr && G_VALUE_HOLDS_OBJECT(held)) e.cudaContext = g_value_get_object(held);
        gst_context_unref(cuda);
      }
    }
    g_value_reset(&item);
  }
  g_value_unset(&item);
  gst_iterator_free(it);
}

}  // namespace

std::vector<std::string> PipelineRun::from(const std::vector<std::string>& messages, const std::string& source) const {
  std::vector<std::string> texts;
  const std::string prefix = source + ": ";
  for (const std::string& m : messages)
    if (m.compare(0, prefix.size(), prefix) == 0) texts.push_back(m.substr(prefix.size()));
  return texts;
}

PipelineRun runPipeline(const std::string& description, const std::vector<GstBuffer*>& input, int timeoutSeconds,
                        const std::vector<GstCaps*>& caps,
                        const std::function<void(GstElement*, std::size_t)>& afterPush) {
  PipelineRun run;
  GError* error = nullptr;
  GstElement* pipeline = gst_parse_launch(description.c_str(), &error);
  if (pipeline == nullptr || error != nullptr) {  // a missing element leaves a partial pipeline
    ADD_FAILURE() << description << ": " << (error ? error->message : "parse failed");
    g_clear_error(&error);
    if (pipeline != nullptr) gst_object_unref(pipeline);
    return run;
  }
  GstElement* src = gst_bin_get_by_name(GST_BIN(pipeline), "src");
  GstBus* bus = gst_element_get_bus(pipeline);
  if (gst_element_set_state(pipeline, GST_STATE_PLAYING) != GST_STATE_CHANGE_FAILURE && src != nullptr) {
    for (std::size_t i = 0; i < input.size(); ++i) {
      if (i < caps.size() && caps[i] != nullptr) {  // appsrc takes the sample's caps, in order
        GstSample* sample = gst_sample_new(input[i], caps[i], nullptr, nullptr);
        gst_app_src_push_sample(GST_APP_SRC(src), sample);
        gst_sample_unref(sample);
      } else {
        gst_app_src_push_buffer(GST_APP_SRC(src), gst_buffer_ref(input[i]));
      }
      if (afterPush) afterPush(pipeline, i + 1);
    }
    gst_app_src_end_of_stream(GST_APP_SRC(src));
  }
  const gint64 deadline = g_get_monotonic_time() + gint64(timeoutSeconds) * G_TIME_SPAN_SECOND;
  bool done = false;
  while (!done) {
    if (g_get_monotonic_time() > deadline) {
      ADD_FAILURE() << description << ": neither EOS nor an error within " << timeoutSeconds << " s";
      break;
    }
    GstMessage* msg = gst_bus_timed_pop_filtered(
        bus, 50 * GST_MSECOND,
        GstMessageType(GST_MESSAGE_EOS | GST_MESSAGE_ERROR | GST_MESSAGE_WARNING | GST_MESSAGE_ELEMENT));
    if (msg == nullptr) continue;
    const std::string source = GST_MESSAGE_SRC(msg) != nullptr ? GST_OBJECT_NAME(GST_MESSAGE_SRC(msg)) : "";
    switch (GST_MESSAGE_TYPE(msg)) {
      case GST_MESSAGE_ERROR:
        run.errors.push_back(source + ": " + messageText(msg));
        done = true;
        break;
      case GST_MESSAGE_WARNING:
        run.warnings.push_back(source + ": " + messageText(msg));
        break;
      case GST_MESSAGE_EOS:
        run.eos = done = true;
        break;
      default: {
        const GstStructure* s = gst_message_get_structure(msg);
        if (s != nullptr && gst_structure_has_name(s, "nccmatch"))
          run.elements[source].matches.push_back(foundIn(s));
      }
    }
    gst_message_unref(msg);
  }
  // Warnings posted just before EOS or the error.
  while (GstMessage* msg = gst_bus_pop_filtered(bus, GST_MESSAGE_WARNING)) {
    run.warnings.push_back(std::string(GST_OBJECT_NAME(GST_MESSAGE_SRC(msg))) + ": " + messageText(msg));
    gst_message_unref(msg);
  }
  readStats(pipeline, &run);
  gst_element_set_state(pipeline, GST_STATE_NULL);
  if (src != nullptr) gst_object_unref(src);
  gst_object_unref(bus);
  gst_object_unref(pipeline);
  return run;
}

void expectSameMatches(const ElementRun& got, const ElementRun& want, double tolerance) {
  ASSERT_EQ(got.matches.size(), want.matches.size());
  for (std::size_t f = 0; f < want.matches.size(); ++f) {
    SCOPED_TRACE(::testing::Message() << "frame " << f);
    ASSERT_EQ(got.matches[f].size(), want.matches[f].size());
    for (std::size_t i = 0; i < want.matches[f].size(); ++i) {
      EXPECT_EQ(got.matches[f][i].templateIndex, want.matches[f][i].templateIndex);
      EXPECT_EQ(got.matches[f][i].x, want.matches[f][i].x);
      EXPECT_EQ(got.matches[f][i].y, want.matches[f][i].y);
      EXPECT_NEAR(got.matches[f][i].score, want.matches[f][i].score, tolerance);
      EXPECT_EQ(got.matches[f][i].trackId, want.matches[f][i].trackId);
      EXPECT_EQ(got.matches[f][i].trackState, want.matches[f][i].trackState);
    }
  }
}

}  // namespace nccmatch::test
