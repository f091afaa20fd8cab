// The report's page and its ranks and device sections, from the files beside
// this one (page.html with page.css and page.js; ranks_section.html with
// ranks_section.js; device_section.html with device_section.js), embedded at build time by embed_page.cmake. The page
// holds @DATA@ where the report's JSON goes; the section @RANKS@ where the
// ranks' JSON goes, and goes before the page's </body>: a heat map of step
// time per rank and step (white to red, the straggler of each step outlined)
// and the stragglers' table. Plain SVG and DOM: no library, no network.
#pragma once

#include <string>
#include <string_view>

namespace dftracer::analyze {

extern const char kReportPage[];
extern const char kRanksSection[];
extern const char kDeviceSection[];  // @DEVICE@: the `device --format json` document; tables, plain DOM

// `page` (one of the above) with its `placeholder` replaced by the JSON
// document `json`. The data sits in a <script> element, so every '<' is
// written as \u003c ("</" must not close the element early) and raw newlines
// between tokens are dropped.
inline std::string fill_page(std::string page, std::string_view placeholder, std::string_view json) {
  std::string data;
  data.reserve(json.size());
  for (char c : json) {
    if (c == '<') data += "\\u003c";
    else if (c != '\n') data += c;
  }
  page.replace(page.find(placeholder), placeholder.size(), data);
  return page;
}

}  // namespace dftracer::analyze
