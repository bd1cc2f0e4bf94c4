// CRC-32 (IEEE 802.3, reflected, polynomial 0xEDB88320) one-byte update.
// Include inside a module body.
function [31:0] crc32_byte;
    input [31:0] crc;
    input [7:0] d;
    integer i;
    reg [31:0] c;
    begin
        c = crc ^ {24'd0, d};
        for (i = 0; i < 8; i = i + 1)
            c = c[0] ? ((c >> 1) ^ 32'hEDB88320) : (c >> 1);
        crc32_byte = c;
    end
endfunction
