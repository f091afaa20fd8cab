// The report's page and its ranks and device sections, from the files beside
// this one (page.html with page.css and page.js; ranks_section.html with
// ranks_section.js; device_section.html with device_section.js), embedded at build time by embed_page.cmake. The page
// holds @DATA@ where the report's JSON goes; the section @RANKS@ where the
// ranks' JSON goes, and goes before the page's </body>: a heat map of step
// time per rank and step (white to red, the straggler of each step outlined)
// and the stragglers' table. Plain SVG and DOM: no library, no network.
#pragma once

namespace dftracer::analyze {

extern const char kReportPage[];
extern const char kRanksSection[];
extern const char kDeviceSection[];  // @DEVICE@: the `device --format json` document; tables, plain DOM

}  // namespace dftracer::analyze
