// MDIO management master (IEEE 802.3 clause 22) for the PHYs' registers.
// One frame per command: 32-bit preamble of ones, ST = 01, OP = 01 (write) or 10 (read),
// 5-bit PHY address, 5-bit register address, turnaround, 16 data bits, MSB first.
// MDC = clk / (2 * HALF); every bit is driven at the start of MDC's low phase and sampled by
// the PHY at the rising edge HALF cycles later, so setup and hold are both HALF clock periods.
// A read releases MDIO from the first turnaround bit on (the PHY drives the second one low and
// then the data); the master samples MDIO at each rising edge of MDC. mdio_i should carry a
// pull-up on the board (the B50612D's MDIO is open while idle); a read whose turnaround bit is
// not 0 (no PHY answered) sets rd_err.
`timescale 1ns / 1ps
`default_nettype none
module wccp_mdio #(
    parameter integer HALF = 32             // 125 MHz / 64 = 1.95 MHz (clause 22: <= 2.5 MHz)
) (
    input  wire        clk,
    input  wire        rst,
    input  wire        start,               // one cycle while !busy: take the command below
    input  wire        rd,                  // 1 = read, 0 = write
    input  wire [4:0]  phy,
    input  wire [4:0]  regad,
    input  wire [15:0] wdata,
    output reg         busy,
    output reg         done,                // one cycle at the end of a frame
    output reg  [15:0] rdata,               // valid with done after a read
    output reg         rd_err,              // valid with done after a read: no turnaround 0
    output reg         mdc,
    output reg         mdio_o,
    output reg         mdio_oe,
    input  wire        mdio_i
);
    localparam integer CW = $clog2(HALF);       // HALF >= 2
    localparam integer LAST = HALF - 1;
    reg [CW-1:0] div;
    reg [5:0]    bitn;                      // bit of the frame, 0..63
    reg [31:0]   sh;                        // bits 32..63 of the frame (after the preamble)
    reg          op_rd;
    reg [1:0]    mi;                        // mdio_i synchroniser
    always @(posedge clk) begin
        mi <= {mi[0], mdio_i};
        done <= 1'b0;
        if (rst) begin
            busy <= 1'b0;
            mdc <= 1'b0;
            mdio_o <= 1'b1;
            mdio_oe <= 1'b0;
            div <= {CW{1'b0}};
            bitn <= 6'd0;
            rd_err <= 1'b0;
        end else if (!busy) begin
            mdc <= 1'b0;
            if (start) begin
                busy <= 1'b1;
                op_rd <= rd;
                sh <= {2'b01, rd ? 2'b10 : 2'b01, phy, regad, rd ? 2'b11 : 2'b10, rd ? 16'hffff : wdata};
                bitn <= 6'd0;
                div <= {CW{1'b0}};
                mdio_o <= 1'b1;             // preamble bit 0
                mdio_oe <= 1'b1;
            end
        end else if (div != LAST[CW-1:0]) begin
            div <= div + 1'b1;
        end else begin
            div <= {CW{1'b0}};
            if (!mdc) begin
                mdc <= 1'b1;                // rising edge: the PHY samples, the master too
                if (op_rd && bitn == 6'd47)
                    rd_err <= mi[1];
                if (op_rd && bitn >= 6'd48)
                    rdata <= {rdata[14:0], mi[1]};
            end else begin
                mdc <= 1'b0;                // falling edge: the next bit
                if (bitn == 6'd63) begin
                    busy <= 1'b0;
                    done <= 1'b1;
                    mdio_o <= 1'b1;
                    mdio_oe <= 1'b0;
                end else begin
                    bitn <= bitn + 6'd1;
                    if (bitn >= 6'd31) begin
                        mdio_o <= sh[31];
                        sh <= {sh[30:0], 1'b1};
                    end
                    // a read hands MDIO to the PHY from bit 46 (the first turnaround bit) on
                    if (op_rd && bitn == 6'd45)
                        mdio_oe <= 1'b0;
                end
            end
        end
    end
    initial begin
        busy = 1'b0;
        done = 1'b0;
        mdc = 1'b0;
        mdio_o = 1'b1;
        mdio_oe = 1'b0;
        rd_err = 1'b0;
        rdata = 16'd0;
        mi = 2'b11;
    end
endmodule
`default_nettype wire
