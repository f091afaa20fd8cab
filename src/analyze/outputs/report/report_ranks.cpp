#include "report_ranks.hpp"

#include <sstream>

#include "ranks.hpp"
#include "report_page.hpp"

namespace dftracer::analyze {

std::string with_ranks_section(std::string page, const std::vector<std::string>& files, unsigned threads,
                               const ReadOptions& options) {
  RankReport r = analyze_ranks(files, threads, options, true);
  size_t ranks = 0;
  for (const RankProcess& p : r.processes) ranks += p.rank >= 0;
  const size_t at = page.rfind("</body>");
  if (ranks < 2 || at == std::string::npos) return page;
  std::ostringstream os;
  write_ranks_json(os, r, {"steps", "stragglers"});
  page.insert(at, fill_page(kRanksSection, "@RANKS@", os.str()));  // ranks_section.html, ranks_section.js
  return page;
}

}  // namespace dftracer::analyze
