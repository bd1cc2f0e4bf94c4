// Double-banked table RAM (maps to ECP5 DP16KD): the datapath reads the live bank, the
// register interface writes the shadow bank. After a commit flips `live`, copy_start
// copies the new live bank into the new shadow bank (3 cycles per word: read, register,
// write — the block RAM's output only ever feeds flip-flops, for timing) so that later
// partial updates start from the live contents.
`timescale 1ns / 1ps
`default_nettype none
module wccp_bank_ram #(
    parameter AW = 8,
    parameter DW = 32
) (
    input  wire          clk,
    input  wire          rst,
    input  wire          live,
    input  wire          wr_en,
    input  wire [AW-1:0] wr_addr,
    input  wire [DW-1:0] wr_data,
    input  wire [AW-1:0] rd_addr,
    output reg  [DW-1:0] rd_data,
    input  wire          copy_start,
    output reg           copy_busy
);
    reg [DW-1:0] mem [0:(1 << (AW + 1)) - 1];
    reg [AW-1:0] cidx;
    reg  [1:0]   cphase;          // 0 read the live word, 1 register it, 2 write it
    reg [DW-1:0] b_rdata, b_rdata_q;

    wire          b_we   = copy_busy ? (cphase == 2'd2) : wr_en;
    wire [AW:0]   b_addr = copy_busy ? {(cphase == 2'd2) ? ~live : live, cidx} : {~live, wr_addr};
    wire [DW-1:0] b_wdata = copy_busy ? b_rdata_q : wr_data;

    integer i;
    initial begin
        for (i = 0; i < (1 << (AW + 1)); i = i + 1) mem[i] = {DW{1'b0}};
    end

    // three-stage read: the RAM's own register, then two fabric registers (the first sits next
    // to the block RAM, whose clock-to-out is long): data 3 cycles after the address
    reg [DW-1:0] rd_q, rd_q2;
    always @(posedge clk) begin
        rd_q <= mem[{live, rd_addr}];
        rd_q2 <= rd_q;
        rd_data <= rd_q2;
    end

    always @(posedge clk) begin
        if (b_we) mem[b_addr] <= b_wdata;
        b_rdata <= mem[b_addr];
        b_rdata_q <= b_rdata;
    end

    always @(posedge clk) begin
        if (rst) begin
            copy_busy <= 1'b0;
            cidx <= {AW{1'b0}};
            cphase <= 2'd0;
        end else if (copy_start) begin
            copy_busy <= 1'b1;
            cidx <= {AW{1'b0}};
            cphase <= 2'd0;
        end else if (copy_busy) begin
            cphase <= (cphase == 2'd2) ? 2'd0 : cphase + 2'd1;
            if (cphase == 2'd2) begin
                cidx <= cidx + 1'b1;
                if (&cidx) copy_busy <= 1'b0;
            end
        end
    end
endmodule
`default_nettype wire
