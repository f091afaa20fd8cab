# The report's page as bytes for the command: reads INPUT (an .html file),
# inlines the files it links beside it -- <link rel="stylesheet" href="X"> as
# "<style>\n" X "</style>", <script src="X"></script> as "<script>\n" X
# "</script>" -- and writes OUTPUT, a C++ source defining SYMBOL (declared in
# report_page.hpp) as the page's bytes and a terminating NUL. So page.html,
# page.css and page.js stay real files (read, linted and tested as what they
# are) and the command still writes one self-contained page.
#
#   cmake -DINPUT=page.html -DOUTPUT=report_page.cpp -DSYMBOL=kReportPage -P embed_page.cmake
foreach(_v INPUT OUTPUT SYMBOL)
  if(NOT ${_v})
    message(FATAL_ERROR "embed_page.cmake: -D${_v}= is required")
  endif()
endforeach()
file(READ ${INPUT} _page)
get_filename_component(_dir ${INPUT} DIRECTORY)
string(REGEX MATCHALL "<link rel=\"stylesheet\" href=\"[^\"]+\">|<script src=\"[^\"]+\"></script>" _refs "${_page}")
foreach(_ref IN LISTS _refs)
  if(_ref MATCHES "^<link")
    string(REGEX REPLACE "^<link rel=\"stylesheet\" href=\"([^\"]+)\">$" "\\1" _name "${_ref}")
    set(_open "<style>\n")
    set(_close "</style>")
  else()
    string(REGEX REPLACE "^<script src=\"([^\"]+)\"></script>$" "\\1" _name "${_ref}")
    set(_open "<script>\n")
    set(_close "</script>")
  endif()
  if(NOT EXISTS ${_dir}/${_name})
    message(FATAL_ERROR "embed_page.cmake: ${INPUT} links ${_name}, which is not beside it")
  endif()
  file(READ ${_dir}/${_name} _text)
  string(REPLACE "${_ref}" "${_open}${_text}${_close}" _page "${_page}")
endforeach()
# The bytes, through a file: CMake reads a file as hex, not a string.
file(WRITE ${OUTPUT}.page "${_page}")
file(READ ${OUTPUT}.page _hex HEX)
file(REMOVE ${OUTPUT}.page)
string(REGEX REPLACE "([0-9a-f][0-9a-f])" "0x\\1," _bytes "${_hex}")
string(REGEX REPLACE "((0x..,){24})" "\\1\n" _bytes "${_bytes}")
get_filename_component(_from ${INPUT} NAME)
file(WRITE ${OUTPUT} "// Generated from ${_from} by embed_page.cmake: edit that file, not this one.
#include \"report_page.hpp\"

namespace dftracer::analyze {

extern const char ${SYMBOL}[] = {
${_bytes}0x00};

}  // namespace dftracer::analyze
")
